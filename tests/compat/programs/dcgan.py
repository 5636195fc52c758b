"""DCGAN training steps in the style of the PyTorch example (16x16 images, small nets):
`weights_init` through `m.weight.data.normal_`, BCELoss, labels from `torch.full`, Adam with
betas, `.detach()` of the fake batch for the discriminator step."""
import ember as torch
from ember import nn, optim

nz, ngf, ndf, nc = 8, 16, 16, 1


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        m.weight.data.normal_(0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        m.weight.data.normal_(1.0, 0.02)
        m.bias.data.fill_(0)


class Generator(nn.Module):
    def __init__(self):
        super(Generator, self).__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super(Discriminator, self).__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


def real_batch(b, g):
    # bright squares on a dark background
    x = torch.full((b, nc, 16, 16), -1.0)
    off = torch.randint(0, 8, (b, 2), generator=g)
    for i in range(b):
        r, c = int(off[i, 0]), int(off[i, 1])
        x[i, :, r:r + 8, c:c + 8] = 1.0
    return x


def main(steps=30, batch_size=16):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    netG, netD = Generator(), Discriminator()
    netG.apply(weights_init)
    netD.apply(weights_init)
    criterion = nn.BCELoss()
    fixed_noise = torch.randn(batch_size, nz, 1, 1)
    real_label, fake_label = 1., 0.
    optimizerD = optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
    d_losses, g_losses = [], []
    for i in range(steps):
        netD.zero_grad()
        real_cpu = real_batch(batch_size, g)
        label = torch.full((batch_size,), real_label, dtype=torch.float)
        output = netD(real_cpu)
        errD_real = criterion(output, label)
        errD_real.backward()
        noise = torch.randn(batch_size, nz, 1, 1)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        errD = errD_real + errD_fake
        optimizerD.step()
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        optimizerG.step()
        d_losses.append(errD.item())
        g_losses.append(errG.item())
        if i % 10 == 0:
            print('[%d/%d] Loss_D: %.4f Loss_G: %.4f' % (i, steps, errD.item(), errG.item()))
    with torch.no_grad():
        assert netG(fixed_noise).shape == (batch_size, nc, 16, 16)
    return d_losses


if __name__ == "__main__":
    main()
