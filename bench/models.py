"""The benchmark models, written once as functions of the library module (`lib` is ember or torch).

The six training workloads of the PyTorch paper's throughput table (Paszke et al. 2019, table 1),
scaled down for a 2-core CPU: AlexNet, VGG, ResNet, MobileNetV2, GNMT, NCF. Each builder takes
`lib` and returns a module built from `lib.nn` only, so ember and torch run the same program.
`share_weights` copies one library's initial state into the other through NumPy, so both do the
same arithmetic on the same numbers.
"""
import numpy as np

_SHARED = {}


def share_weights(lib, model, key):
    """The first library to build `key` donates its initial state; later builds load it (via NumPy)."""
    if key not in _SHARED:
        _SHARED[key] = {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}
        return model
    state = {k: lib.from_numpy(v.copy()) for k, v in _SHARED[key].items()}
    model.load_state_dict(state)
    return model


def forget_weights():
    """Drop the shared initial states (the next build of each model donates anew)."""
    _SHARED.clear()


# ---- convolutional networks (images) -----------------------------------------------------------

def alexnet(lib, num_classes=100):
    """AlexNet's shape (5 convs, 3 max-pools, 3 dropout+linear layers) at 64x64 input."""
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(3, 32, 5, stride=2, padding=2), nn.ReLU(inplace=True),   # 32x32
        nn.MaxPool2d(3, 2),                                                 # 15x15
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2),                                                 # 7x7
        nn.Conv2d(64, 96, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(96, 96, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(96, 64, 3, padding=1), nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2),                                                 # 3x3
        nn.Flatten(),
        nn.Dropout(0.5), nn.Linear(64 * 3 * 3, 512), nn.ReLU(inplace=True),
        nn.Dropout(0.5), nn.Linear(512, 512), nn.ReLU(inplace=True),
        nn.Linear(512, num_classes),
    )


def vgg(lib, num_classes=10, cfg=(32, "M", 64, "M", 128, 128, "M", 256, 256, "M")):
    """VGG with BatchNorm (3x3 convs, 2x2 max-pools) for 32x32 input, 6 conv layers."""
    nn = lib.nn
    layers = []
    cin = 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(2, 2))
            continue
        layers += [nn.Conv2d(cin, v, 3, padding=1, bias=False), nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
        cin = v
    layers += [nn.Flatten(), nn.Linear(cin * 2 * 2, num_classes)]
    return nn.Sequential(*layers)


def resnet(lib, num_classes=10, widths=(16, 32, 64), blocks=(1, 1, 1)):
    """A CIFAR ResNet (He et al. 2016, section 4.2) with BasicBlocks and BatchNorm: ResNet-8 (one block
    per stage at 16/32/64 channels, projection shortcuts where the shape changes)."""
    nn = lib.nn

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = self.bn1(self.conv1(x)).relu()
            out = self.bn2(self.conv2(out))
            return (out + self.shortcut(x)).relu()

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, padding=1, bias=False), nn.BatchNorm2d(widths[0]),
                                      nn.ReLU(inplace=True))
            stages = []
            cin = widths[0]
            for i, (w, n) in enumerate(zip(widths, blocks)):
                for j in range(n):
                    stages.append(BasicBlock(cin, w, 2 if (i > 0 and j == 0) else 1))
                    cin = w
            self.stages = nn.Sequential(*stages)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(cin, num_classes)

        def forward(self, x):
            x = self.stages(self.stem(x))
            return self.fc(self.pool(x).flatten(1))

    return ResNet()


def mobilenet_v2(lib, num_classes=10, width=0.5):
    """MobileNetV2 (Sandler et al. 2018): inverted residuals with depthwise 3x3 convs and ReLU6,
    stride-1 stem for 32x32 input, width multiplier 0.5, the first four stages of the paper's table 2
    (the 24-channel stage at stride 2 as in ImageNet, so later stages run at 16/8/4 pixels)."""
    nn = lib.nn

    def ch(c):
        return max(8, int(c * width + 4) // 8 * 8)

    class InvertedResidual(nn.Module):
        def __init__(self, cin, cout, stride, expand):
            super().__init__()
            hidden = cin * expand
            self.use_res = stride == 1 and cin == cout
            layers = []
            if expand != 1:
                layers += [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True)]
            layers += [nn.Conv2d(hidden, hidden, 3, stride=stride, padding=1, groups=hidden, bias=False),
                       nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True),
                       nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
            self.conv = nn.Sequential(*layers)

        def forward(self, x):
            if self.use_res:
                return x + self.conv(x)
            return self.conv(x)

    class MobileNetV2(nn.Module):
        # (expansion t, channels c, repeats n, stride s) as in the paper's table 2, first four rows
        settings = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 2, 2))

        def __init__(self):
            super().__init__()
            cin = ch(32)
            layers = [nn.Conv2d(3, cin, 3, padding=1, bias=False), nn.BatchNorm2d(cin), nn.ReLU6(inplace=True)]
            for t, c, n, s in self.settings:
                for i in range(n):
                    layers.append(InvertedResidual(cin, ch(c), s if i == 0 else 1, t))
                    cin = ch(c)
            last = 256
            layers += [nn.Conv2d(cin, last, 1, bias=False), nn.BatchNorm2d(last), nn.ReLU6(inplace=True)]
            self.features = nn.Sequential(*layers)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, num_classes))

        def forward(self, x):
            return self.classifier(self.pool(self.features(x)).flatten(1))

    return MobileNetV2()


# ---- sequence-to-sequence: GNMT ----------------------------------------------------------------

def gnmt(lib, vocab=2000, embed=128, hidden=128):
    """GNMT's shape (Wu et al. 2016) at small size: embedding, a bidirectional LSTM layer then a
    residual unidirectional one for the encoder, a 2-layer LSTM decoder with (Luong, general)
    attention over the encoder states, and a projection to the vocabulary. Teacher forcing."""
    nn = lib.nn

    class GNMT(nn.Module):
        def __init__(self):
            super().__init__()
            self.src_embed = nn.Embedding(vocab, embed)
            self.tgt_embed = nn.Embedding(vocab, embed)
            self.enc_bi = nn.LSTM(embed, hidden // 2, batch_first=True, bidirectional=True)
            self.enc_top = nn.LSTM(hidden, hidden, batch_first=True)
            self.decoder = nn.LSTM(embed, hidden, num_layers=2, batch_first=True)
            self.attn = nn.Linear(hidden, hidden, bias=False)
            self.combine = nn.Linear(2 * hidden, hidden)
            self.project = nn.Linear(hidden, vocab)

        def forward(self, src, tgt):
            enc, _ = self.enc_bi(self.src_embed(src))                  # (B, S, H)
            top, _ = self.enc_top(enc)
            enc = enc + top                                            # residual, as in GNMT
            dec, _ = self.decoder(self.tgt_embed(tgt))                 # (B, T, H)
            scores = dec @ self.attn(enc).transpose(1, 2)              # (B, T, S)
            context = scores.softmax(-1) @ enc                         # (B, T, H)
            mixed = self.combine(lib.cat([dec, context], -1)).tanh()
            return self.project(mixed)                                 # (B, T, vocab)

    return GNMT()


# ---- recommendation: NCF -----------------------------------------------------------------------

def ncf(lib, users=6040, items=3706, mf_dim=32, mlp=(128, 64, 32)):
    """NeuMF (He et al. 2017), MovieLens-1M sizes: a GMF branch (elementwise product of embeddings)
    and an MLP branch (concatenated embeddings through 3 layers), fused by one linear output."""
    nn = lib.nn

    class NeuMF(nn.Module):
        def __init__(self):
            super().__init__()
            self.mf_user = nn.Embedding(users, mf_dim)
            self.mf_item = nn.Embedding(items, mf_dim)
            self.mlp_user = nn.Embedding(users, mlp[0] // 2)
            self.mlp_item = nn.Embedding(items, mlp[0] // 2)
            layers = []
            for a, b in zip(mlp[:-1], mlp[1:]):
                layers += [nn.Linear(a, b), nn.ReLU()]
            self.mlp = nn.Sequential(*layers)
            self.out = nn.Linear(mf_dim + mlp[-1], 1)

        def forward(self, user, item):
            gmf = self.mf_user(user) * self.mf_item(item)
            deep = self.mlp(lib.cat([self.mlp_user(user), self.mlp_item(item)], -1))
            return self.out(lib.cat([gmf, deep], -1)).squeeze(-1)

    return NeuMF()


# ---- small models for the micro rows -----------------------------------------------------------

def mlp(lib, sizes=(784, 512, 512, 10)):
    """The classic MNIST MLP: Linear-ReLU-Linear-ReLU-Linear."""
    nn = lib.nn
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def np_images(batch, size, classes, seed=0):
    """Random float32 images (N, 3, size, size) and integer labels, as NumPy arrays."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, 3, size, size), dtype=np.float32)
    y = rng.integers(0, classes, batch)
    return x, y
