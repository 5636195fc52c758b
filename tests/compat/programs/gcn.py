"""A two-layer graph convolutional network (Kipf & Welling) on a synthetic two-community
graph, with the normalised adjacency as a sparse COO tensor and `torch.spmm`."""
import ember as torch
import ember.nn.functional as F
from ember import nn, optim


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features):
        super(GraphConvolution, self).__init__()
        self.weight = nn.Parameter(torch.FloatTensor(in_features, out_features))
        self.bias = nn.Parameter(torch.FloatTensor(out_features))
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1. / self.weight.size(1) ** 0.5
        self.weight.data.uniform_(-stdv, stdv)
        self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        output = torch.spmm(adj, support)
        return output + self.bias


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super(GCN, self).__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.gc2(x, adj)
        return F.log_softmax(x, dim=1)


def make_graph(n=120, p_in=0.12, p_out=0.01, nfeat=16):
    g = torch.Generator().manual_seed(0)
    labels = (torch.arange(n) >= n // 2).long()
    same = labels[:, None] == labels[None, :]
    prob = torch.where(same, torch.full((n, n), p_in), torch.full((n, n), p_out))
    upper = torch.triu((torch.rand(n, n, generator=g) < prob).float(), diagonal=1)
    dense = upper + upper.t() + torch.eye(n)
    deg = dense.sum(1)
    norm = dense / deg.sqrt()[:, None] / deg.sqrt()[None, :]
    idx = norm.nonzero().t()
    adj = torch.sparse_coo_tensor(idx, norm[idx[0], idx[1]], (n, n))
    features = torch.randn(n, nfeat, generator=g) * 0.5
    features[:, 0] += labels.float() - 0.5   # a weak signal the graph makes strong
    return adj, features, labels


def main(epochs=60):
    torch.manual_seed(0)
    adj, features, labels = make_graph()
    idx_train = torch.arange(0, 120, 6)
    model = GCN(nfeat=features.shape[1], nhid=16, nclass=2, dropout=0.5)
    optimizer = optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    losses = []
    for epoch in range(epochs):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        loss_train.backward()
        optimizer.step()
        losses.append(loss_train.item())
    model.eval()
    output = model(features, adj)
    acc = output.max(1)[1].eq(labels).double().mean().item()
    print("loss {:.4f} -> {:.4f}, accuracy {:.3f}".format(losses[0], losses[-1], acc))
    assert acc > 0.8, acc
    return losses


if __name__ == "__main__":
    main()
