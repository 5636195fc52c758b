"""A variational auto-encoder in the style of the classic PyTorch example, on synthetic
28x28 'images' (blurred blobs), trained with Adam. Written as torch code: only the import
lines name ember."""
import ember as torch
import ember.nn.functional as F
from ember import nn, optim


class VAE(nn.Module):
    def __init__(self):
        super(VAE, self).__init__()
        self.fc1 = nn.Linear(784, 200)
        self.fc21 = nn.Linear(200, 16)
        self.fc22 = nn.Linear(200, 16)
        self.fc3 = nn.Linear(16, 200)
        self.fc4 = nn.Linear(200, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction='sum')
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def make_data(n=256):
    g = torch.Generator().manual_seed(0)
    ys, xs = torch.meshgrid(torch.arange(28.), torch.arange(28.), indexing="ij")
    centers = torch.rand(n, 2, generator=g) * 16 + 6
    d2 = (xs[None] - centers[:, 0, None, None]) ** 2 + (ys[None] - centers[:, 1, None, None]) ** 2
    return torch.exp(-d2 / 18.0).unsqueeze(1)


def main(epochs=4, batch_size=32):
    torch.manual_seed(1)
    data = make_data()
    model = VAE()
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for epoch in range(1, epochs + 1):
        model.train()
        train_loss = 0
        perm = torch.randperm(data.size(0))
        for i in range(0, data.size(0), batch_size):
            x = data[perm[i:i + batch_size]]
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(x)
            loss = loss_function(recon_batch, x, mu, logvar)
            loss.backward()
            train_loss += loss.item()
            optimizer.step()
        losses.append(train_loss / len(data))
        print('====> Epoch: {} Average loss: {:.4f}'.format(epoch, losses[-1]))
    with torch.no_grad():
        sample = model.decode(torch.randn(8, 16))
        assert sample.shape == (8, 784)
    return losses


if __name__ == "__main__":
    main()
