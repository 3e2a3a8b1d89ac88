"""pytorch/examples gcn/main.py on a synthetic Cora-like citation graph (offline).

Same program: GraphConv layers (torch.mm with the weight, torch.spmm with the normalized sparse
adjacency), the Cora loader's preprocessing (torch.FloatTensor features row-scaled through a sparse
diagonal, torch.sparse_coo_tensor edges, torch.eye(V) + adj, D^-1/2 A D^-1/2 with sparse diagonals,
.to_sparse()), a torch.randperm split, Adam with weight decay, NLLLoss on index masks.

The graph replaces cora.content/cora.cites with the same layout: a stochastic block model of
`--classes` communities (papers cite mostly inside their community) whose binary bag-of-words
features are noisy draws from a per-community vocabulary.
"""
import argparse
import time

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F
from torch.optim import Adam


class GraphConv(nn.Module):
    """Graph Convolutional Layer: H' = f(D^(-1/2) * A * D^(-1/2) * H * W)."""

    def __init__(self, input_dim, output_dim, use_bias=False):
        super(GraphConv, self).__init__()

        # Initialize the weight matrix W (in this case called `kernel`)
        self.kernel = nn.Parameter(torch.Tensor(input_dim, output_dim))
        nn.init.xavier_normal_(self.kernel)  # Initialize the weights using Xavier initialization

        # Initialize the bias (if use_bias is True)
        self.bias = None
        if use_bias:
            self.bias = nn.Parameter(torch.Tensor(output_dim))
            nn.init.zeros_(self.bias)  # Initialize the bias to zeros

    def forward(self, input_tensor, adj_mat):
        support = torch.mm(input_tensor, self.kernel)  # Matrix multiplication between input and weight matrix
        output = torch.spmm(adj_mat, support)  # Sparse matrix multiplication between adjacency matrix and support
        # Add the bias (if bias is not None)
        if self.bias is not None:
            output = output + self.bias

        return output


class GCN(nn.Module):
    """Two GraphConv layers with ReLU and dropout between them, log-softmax on top."""

    def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.1):
        super(GCN, self).__init__()

        # Define the Graph Convolution layers
        self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=use_bias)
        self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=use_bias)

        # Define the dropout layer
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input_tensor, adj_mat):
        # Perform the first graph convolutional layer
        x = self.gc1(input_tensor, adj_mat)
        x = F.relu(x)  # Apply ReLU activation function
        x = self.dropout(x)  # Apply dropout regularization

        # Perform the second graph convolutional layer
        x = self.gc2(x, adj_mat)

        # Apply log-softmax activation function for classification
        return F.log_softmax(x, dim=1)


def make_cora_like(nodes=300, classes=4, words=60, seed=0):
    """Arrays laid out like cora.content (id, word flags..., class name) and cora.cites (id, id)."""
    rng = np.random.RandomState(seed)
    ids = rng.choice(100000, size=nodes, replace=False)
    label = rng.randint(classes, size=nodes)
    vocabulary = rng.rand(classes, words) < 0.15
    flags = np.where(rng.rand(nodes, words) < 0.7, vocabulary[label], rng.rand(nodes, words) < 0.05)
    flags[flags.sum(1) == 0, 0] = True  # every paper uses at least one word
    content = np.concatenate([ids[:, None].astype(str), flags.astype(int).astype(str),
                              np.array(['Topic_%d' % c for c in label])[:, None]], axis=1)
    same = label[:, None] == label[None, :]
    cite = np.triu(rng.rand(nodes, nodes) < np.where(same, 0.04, 0.004), 1)
    source, dest = np.nonzero(cite)
    cites = np.stack([ids[source], ids[dest]], axis=1).astype(np.int32)
    return content, cites


def load_cora(content_tensor, cites_tensor, device='cpu'):
    """The Cora loader: row-normalized features and the renormalized adjacency D^(-1/2) A D^(-1/2)."""
    # Process features
    features = torch.FloatTensor(content_tensor[:, 1:-1].astype(np.int32))  # Extract feature values
    scale_vector = torch.sum(features, dim=1)  # Compute sum of features for each node
    scale_vector = 1 / scale_vector  # Compute reciprocal of the sums
    scale_vector[scale_vector == float('inf')] = 0  # Handle division by zero cases
    scale_vector = torch.diag(scale_vector).to_sparse()  # Convert the scale vector to a sparse diagonal matrix
    features = scale_vector @ features  # Scale the features using the scale vector

    # Process labels
    classes, labels = np.unique(content_tensor[:, -1], return_inverse=True)
    labels = torch.LongTensor(labels)  # Convert labels to a tensor

    # Process adjacency matrix
    idx = content_tensor[:, 0].astype(np.int32)  # Extract node indices
    idx_map = {id: pos for pos, id in enumerate(idx)}  # Create a dictionary to map indices to positions

    # Map node indices to positions in the adjacency matrix
    edges = np.array(
        list(map(lambda edge: [idx_map[edge[0]], idx_map[edge[1]]],
                 cites_tensor)), dtype=np.int32)

    V = len(idx)  # Number of nodes
    E = edges.shape[0]  # Number of edges
    adj_mat = torch.sparse_coo_tensor(edges.T, torch.ones(E), (V, V), dtype=torch.int64)
    adj_mat = torch.eye(V) + adj_mat  # Add self-loops to the adjacency matrix

    degree_mat = torch.sum(adj_mat, dim=1)  # Compute the sum of each row in the adjacency matrix (degree matrix)
    degree_mat = torch.sqrt(1 / degree_mat)  # Compute the reciprocal square root of the degrees
    degree_mat[degree_mat == float('inf')] = 0  # Handle division by zero cases
    degree_mat = torch.diag(degree_mat).to_sparse()  # Convert the degree matrix to a sparse diagonal matrix

    adj_mat = degree_mat @ adj_mat @ degree_mat  # Apply the renormalization trick

    return features.to_sparse().to(device), labels.to(device), adj_mat.to_sparse().to(device)


def train_iter(epoch, model, optimizer, criterion, input, target, mask_train, mask_val, print_every=10):
    start_t = time.time()
    model.train()
    optimizer.zero_grad()

    # Forward pass
    output = model(*input)
    loss = criterion(output[mask_train], target[mask_train])  # Compute the loss using the training mask

    loss.backward()
    optimizer.step()

    # Evaluate the model performance on training and validation sets
    loss_train, acc_train = test(model, criterion, input, target, mask_train)
    loss_val, acc_val = test(model, criterion, input, target, mask_val)

    if epoch % print_every == 0:
        # Print the training progress at specified intervals
        print(f'Epoch: {epoch:04d} ({(time.time() - start_t):.4f}s) loss_train: {loss_train:.4f} '
              f'acc_train: {acc_train:.4f} loss_val: {loss_val:.4f} acc_val: {acc_val:.4f}')


def test(model, criterion, input, target, mask):
    model.eval()
    with torch.no_grad():
        output = model(*input)
        output, target = output[mask], target[mask]

        loss = criterion(output, target)
        acc = (output.argmax(dim=1) == target).float().sum() / len(target)
    return loss.item(), acc.item()


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description='PyTorch Graph Convolutional Network')
    parser.add_argument('--epochs', type=int, default=60,
                        help='number of epochs to train (default: 60)')
    parser.add_argument('--lr', type=float, default=0.01,
                        help='learning rate (default: 0.01)')
    parser.add_argument('--l2', type=float, default=5e-4,
                        help='weight decay (default: 5e-4)')
    parser.add_argument('--dropout-p', type=float, default=0.5,
                        help='dropout probability (default: 0.5)')
    parser.add_argument('--hidden-dim', type=int, default=16,
                        help='dimension of the hidden representation (default: 16)')
    parser.add_argument('--val-every', type=int, default=20,
                        help='epochs to wait for print training and validation evaluation (default: 20)')
    parser.add_argument('--include-bias', action='store_true', default=False,
                        help='use bias term in convolutions (default: False)')
    parser.add_argument('--device', type=str, default='cpu',
                        help='backend device')
    parser.add_argument('--dry-run', action='store_true', default=False,
                        help='quickly check a single pass')
    parser.add_argument('--seed', type=int, default=42, metavar='S',
                        help='random seed (default: 42)')
    args = parser.parse_args()

    torch.manual_seed(args.seed)

    if torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device(args.device)
    print(f'Using {device} device')

    print('Loading dataset...')
    content, cites = make_cora_like()
    features, labels, adj_mat = load_cora(content, cites, device=device)
    idx = torch.randperm(len(labels)).to(device)
    idx_test, idx_val, idx_train = idx[:150], idx[150:200], idx[200:]

    gcn = GCN(features.shape[1], args.hidden_dim, labels.max().item() + 1, args.include_bias,
              args.dropout_p).to(device)
    optimizer = Adam(gcn.parameters(), lr=args.lr, weight_decay=args.l2)
    criterion = nn.NLLLoss()

    loss_before, acc_before = test(gcn, criterion, (features, adj_mat), labels, idx_test)
    for epoch in range(args.epochs):
        train_iter(epoch + 1, gcn, optimizer, criterion, (features, adj_mat), labels, idx_train, idx_val,
                   args.val_every)
        if args.dry_run:
            break

    loss_test, acc_test = test(gcn, criterion, (features, adj_mat), labels, idx_test)
    print(f'Test set results: loss {loss_test:.4f} accuracy {acc_test:.4f}')
    print(f'final: initial_test_loss={loss_before:.4f} test_loss={loss_test:.4f} test_accuracy={acc_test:.4f}')
