"""The classic MNIST CNN example: MNIST-format idx files read by `datasets.MNIST`,
`transforms.ToTensor` + `Normalize`, two convolutions, dropout, Adadelta with StepLR."""
import ember as torch
import ember.nn.functional as F
from ember import nn, optim
from ember.optim.lr_scheduler import StepLR
from ember.vision import datasets, transforms


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, 1)
        self.conv2 = nn.Conv2d(16, 32, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(4608, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def train(model, train_loader, optimizer, epoch):
    model.train()
    losses = []
    for batch_idx, (data, target) in enumerate(train_loader):
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test(model, test_loader):
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    n = len(test_loader.dataset)
    print('Test set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)'.format(
        test_loss / n, correct, n, 100. * correct / n))
    return correct / n


def main(root, epochs=2):
    torch.manual_seed(1)
    transform = transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize((0.1307,), (0.3081,))
    ])
    dataset1 = datasets.MNIST(root, train=True, download=False, transform=transform)
    dataset2 = datasets.MNIST(root, train=False, transform=transform)
    train_loader = torch.utils.data.DataLoader(dataset1, batch_size=64, shuffle=True)
    test_loader = torch.utils.data.DataLoader(dataset2, batch_size=250)
    model = Net()
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    losses = []
    for epoch in range(1, epochs + 1):
        epoch_losses = train(model, train_loader, optimizer, epoch)
        losses.append(sum(epoch_losses[:4]) / 4 if epoch == 1 else sum(epoch_losses) / len(
            epoch_losses))
        scheduler.step()
    accuracy = test(model, test_loader)
    assert accuracy > 0.8, accuracy
    return losses
