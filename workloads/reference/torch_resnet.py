"""PyTorch twins of dtbench's models (workloads/models), for the reference data and the speed peer.

The layer order, shapes and parameter names match dtbench's parameter table exactly (they follow
torchvision's naming), so a state_dict maps onto dtbench's flat buffer by name:
  - CIFAR-style ResNet-(6n+2) (He et al. 2016, section 4.2): a 3x3 conv with 16 channels, three stages of n
    basic blocks with 16, 32, 64 channels (stride 2 at the start of stages 2 and 3), global average pooling,
    a fully connected layer. Where a block changes shape its shortcut is a 1x1 convolution with stride and a
    batch norm (option B of the paper; dtbench uses B everywhere the shape changes).
  - ImageNet-style ResNet-18 (basic blocks) and ResNet-50 v1.5 (bottleneck blocks, the stride on the 3x3
    convolution as in torchvision), with the 7x7 stride-2 stem and 3x3 stride-2 max pooling.
  - mlp: input -> hidden -> ReLU -> classes (no batch norm).
  - simple_cnn: Shallue et al.'s Simple CNN (workloads/cpu/simple_cnn.cpp gives the source): two 5x5 "same"
    convolutions with bias, each followed by ReLU and 2x2/2 max pooling, then hidden -> ReLU -> classes.
Batch norm uses eps 1e-5 and momentum 0.1 (PyTorch's defaults, also dtbench's). Only /usr/bin/python3 has
torch 1.13 on this machine.
"""
import torch
from torch import nn

CIFAR_DEPTHS = {"resnet8": 1, "resnet20": 3, "resnet32": 5, "resnet56": 9}


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_c, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_c, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or in_c != planes:
            self.downsample = nn.Sequential(nn.Conv2d(in_c, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def last_bn(self):
        return self.bn2

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu(out + shortcut)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, in_c, planes, stride):
        super().__init__()
        out_c = planes * 4
        self.conv1 = nn.Conv2d(in_c, planes, 1, 1, 0, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, out_c, 1, 1, 0, bias=False)
        self.bn3 = nn.BatchNorm2d(out_c)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or in_c != out_c:
            self.downsample = nn.Sequential(nn.Conv2d(in_c, out_c, 1, stride, bias=False), nn.BatchNorm2d(out_c))

    def last_bn(self):
        return self.bn3

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu(out + shortcut)


class ResNet(nn.Module):
    def __init__(self, block, stages, widths, in_c, classes, imagenet_stem, dropout=0.0):
        super().__init__()
        stem_c = widths[0]
        if imagenet_stem:
            self.conv1 = nn.Conv2d(in_c, stem_c, 7, 2, 3, bias=False)
        else:
            self.conv1 = nn.Conv2d(in_c, stem_c, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(stem_c)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1) if imagenet_stem else None
        c = stem_c
        for i, (n, w) in enumerate(zip(stages, widths)):
            blocks = []
            for j in range(n):
                stride = 2 if (i > 0 and j == 0) else 1
                blocks.append(block(c, w, stride))
                c = w * block.expansion
            setattr(self, "layer%d" % (i + 1), nn.Sequential(*blocks))
        self.num_stages = len(stages)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.dropout = nn.Dropout(dropout) if dropout > 0 else None
        self.fc = nn.Linear(c, classes)

    def blocks(self):
        for i in range(self.num_stages):
            yield from getattr(self, "layer%d" % (i + 1))

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        if self.maxpool is not None:
            x = self.maxpool(x)
        for i in range(self.num_stages):
            x = getattr(self, "layer%d" % (i + 1))(x)
        x = torch.flatten(self.avgpool(x), 1)
        if self.dropout is not None:
            x = self.dropout(x)
        return self.fc(x)


class Mlp(nn.Module):
    def __init__(self, inputs, hidden, classes):
        super().__init__()
        self.fc1 = nn.Linear(inputs, hidden)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(torch.flatten(x, 1))))


class SimpleCnn(nn.Module):
    def __init__(self, in_c, conv_filters, hidden, classes, in_hw):
        super().__init__()
        c1, c2 = conv_filters
        self.conv1 = nn.Conv2d(in_c, c1, 5, 1, 2)
        self.conv2 = nn.Conv2d(c1, c2, 5, 1, 2)
        self.fc1 = nn.Linear(c2 * (in_hw[0] // 4) * (in_hw[1] // 4), hidden)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2, 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2, 2)
        return self.fc2(torch.relu(self.fc1(torch.flatten(x, 1))))


def make_model(arch, in_c, classes, hidden=0, in_hw=(28, 28), conv_filters=(32, 64)):
    if arch in CIFAR_DEPTHS:
        n = CIFAR_DEPTHS[arch]
        return ResNet(BasicBlock, [n, n, n], [16, 32, 64], in_c, classes, imagenet_stem=False)
    if arch == "resnet18":
        return ResNet(BasicBlock, [2, 2, 2, 2], [64, 128, 256, 512], in_c, classes, imagenet_stem=True)
    if arch == "resnet50":
        return ResNet(Bottleneck, [3, 4, 6, 3], [64, 128, 256, 512], in_c, classes, imagenet_stem=True)
    if arch == "mlp":
        return Mlp(in_c * in_hw[0] * in_hw[1], hidden, classes)
    if arch == "simple_cnn":
        return SimpleCnn(in_c, conv_filters, hidden, classes, in_hw)
    raise ValueError("unknown arch " + arch)
