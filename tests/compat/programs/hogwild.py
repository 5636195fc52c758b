"""Hogwild training in the style of the PyTorch example: a model in shared memory, two
processes updating it in place with their own optimizers, the parent evaluating the result."""
import ember as torch
import ember.multiprocessing as mp
import ember.nn.functional as F
from ember import nn, optim


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.fc1 = nn.Linear(8, 32)
        self.fc2 = nn.Linear(32, 3)

    def forward(self, x):
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


def make_data(n=600, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    y = (x[:, 0] > 0.3).long() + (x[:, 1] > 0).long()
    return x, y


def train(rank, model, x, y, epochs):
    torch.manual_seed(1 + rank)
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
    for epoch in range(epochs):
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 32):
            idx = perm[i:i + 32]
            optimizer.zero_grad()
            loss = F.nll_loss(model(x[idx]), y[idx])
            loss.backward()
            optimizer.step()


def test_loss(model, x, y):
    model.eval()
    with torch.no_grad():
        return F.nll_loss(model(x), y).item()


def main(num_processes=2, epochs=3):
    torch.manual_seed(0)
    x, y = make_data()
    model = Net()
    model.share_memory()
    before = [p.detach().clone() for p in model.parameters()]
    losses = [test_loss(model, x, y)]
    processes = []
    for rank in range(num_processes):
        p = mp.Process(target=train, args=(rank, model, x, y, epochs))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
        assert p.exitcode == 0, p.exitcode
    changed = sum(float((p.detach() - b).abs().sum()) for p, b in zip(model.parameters(), before))
    losses.append(test_loss(model, x, y))
    print("weights moved by {:.3f}; test loss {:.4f} -> {:.4f}".format(changed, *losses))
    assert changed > 0
    return losses


if __name__ == "__main__":
    main()
