import torch
import torch.nn as nn
import torch.nn.functional as F

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 8 * 8, 10)
    def forward(self, x):
        y = F.gelu(self.bn(self.conv(x)), approximate="tanh")
        y = F.max_pool2d(y, 2)
        y = torch.flatten(y, 1)
        return torch.log_softmax(self.fc(y), dim=-1), torch.topk(y, 3, dim=-1).values
