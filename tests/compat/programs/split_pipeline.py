"""A `TensorDataset` split with `random_split` (fractions), a `Subset` of the training part,
and `DataLoader`s over both: the data plumbing most torch training scripts start with."""
import ember as torch
import ember.nn.functional as F
from ember import nn, optim
from ember.utils.data import DataLoader, Subset, TensorDataset, random_split


def main(epochs=4):
    torch.manual_seed(0)
    x = torch.randn(1000, 10)
    w = torch.randn(10, 4)
    y = (x @ w).argmax(1)
    dataset = TensorDataset(x, y)
    train_set, val_set = random_split(dataset, [0.8, 0.2],
                                      generator=torch.Generator().manual_seed(42))
    assert (len(train_set), len(val_set)) == (800, 200)
    train_subset = Subset(train_set, list(range(0, 800, 2)))
    train_loader = DataLoader(train_subset, batch_size=32, shuffle=True)
    val_loader = DataLoader(val_set, batch_size=100)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    losses = []
    for epoch in range(epochs):
        model.train()
        total, n = 0.0, 0
        for data, target in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(data), target)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(data)
            n += len(data)
        scheduler.step()
        losses.append(total / n)
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in val_loader:
            correct += (model(data).argmax(dim=1) == target).sum().item()
    print("train loss {:.3f} -> {:.3f}; val accuracy {}/{}".format(losses[0], losses[-1],
                                                                   correct, len(val_set)))
    assert correct / len(val_set) > 0.8
    return losses


if __name__ == "__main__":
    main()
