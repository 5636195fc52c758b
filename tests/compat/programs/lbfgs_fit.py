"""Time-series prediction in the style of the PyTorch example: two LSTMCells unrolled over
sine waves in double precision, fitted with LBFGS through a closure."""
import ember as torch
from ember import nn, optim


class Sequence(nn.Module):
    def __init__(self, hidden=12):
        super(Sequence, self).__init__()
        self.hidden = hidden
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.cat(outputs, dim=1)


def main(steps=3, T=10, L=40, N=12):
    torch.manual_seed(0)
    x = torch.empty(N, L, dtype=torch.long)
    x[:] = torch.arange(L) + torch.randint(-4 * T, 4 * T, (N,)).view(N, 1)
    data = torch.sin(x / 1.0 / T).double()
    input, target = data[:, :-1], data[:, 1:]
    seq = Sequence().double()
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=10)
    losses = [criterion(seq(input), target).item()]
    for i in range(steps):
        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            loss.backward()
            return loss
        optimizer.step(closure)
        with torch.no_grad():
            losses.append(criterion(seq(input), target).item())
        print('STEP: {} loss: {:.6f}'.format(i, losses[-1]))
    with torch.no_grad():
        assert seq(input[:2], future=5).shape == (2, L - 1 + 5)
    return losses


if __name__ == "__main__":
    main()
