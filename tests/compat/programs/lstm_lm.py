"""A word-level LSTM language model in the style of the PyTorch example: batchify, bptt
windows, hidden state repackaged with `.detach()`, gradient clipping and plain SGD written
by hand as `p.data.add_(p.grad, alpha=-lr)`."""
import math

import ember as torch
from ember import nn

CORPUS = ("the cat sat on the mat . the dog sat on the log . a cat saw a dog . "
          "the dog saw the cat on the mat . a dog sat on a log . ") * 20


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.2):
        super(RNNModel, self).__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid, self.nlayers = nhid, nlayers
        self.init_weights()

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.decoder.out_features)
        return nn.functional.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].view(-1)


def main(epochs=12, lr=10.0, bptt=12, clip=0.25, dropout=0.0):
    torch.manual_seed(0)
    words = CORPUS.split()
    vocab = {w: i for i, w in enumerate(sorted(set(words)))}
    ids = torch.tensor([vocab[w] for w in words], dtype=torch.long)
    train_data = batchify(ids, 8)
    model = RNNModel(len(vocab), 32, 32, 2, dropout=dropout)
    criterion = nn.NLLLoss()
    losses = []
    for epoch in range(epochs):
        model.train()
        total, n = 0., 0
        hidden = model.init_hidden(8)
        for i in range(0, train_data.size(0) - 1, bptt):
            data, targets = get_batch(train_data, i, bptt)
            model.zero_grad()
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            total += loss.item()
            n += 1
        losses.append(total / n)
        print('| epoch {:3d} | loss {:5.2f} | ppl {:8.2f}'.format(epoch, losses[-1],
                                                                   math.exp(losses[-1])))
    return losses


if __name__ == "__main__":
    main()
