"""A convolutional autoencoder: a strided Conv2d + BatchNorm + LeakyReLU encoder, a Linear bottleneck
(flatten / unflatten), a ConvTranspose2d decoder (stride 2, output_padding) and a sigmoid output."""
import torch
import torch.nn as nn


class ConvAutoencoder(nn.Module):
    def __init__(self, channels=3, widths=(32, 64, 128), image=64, latent=64):
        super().__init__()
        enc, c = [], channels
        for w in widths:
            enc += [nn.Conv2d(c, w, 3, stride=2, padding=1), nn.BatchNorm2d(w), nn.LeakyReLU(0.2)]
            c = w
        self.encoder = nn.Sequential(*enc)
        self.side = image // 2 ** len(widths)
        self.to_latent = nn.Linear(c * self.side * self.side, latent)
        self.from_latent = nn.Linear(latent, c * self.side * self.side)
        dec = []
        for w in reversed((channels,) + tuple(widths[:-1])):
            dec += [nn.ConvTranspose2d(c, w, 3, stride=2, padding=1, output_padding=1)]
            if w != channels:
                dec += [nn.BatchNorm2d(w), nn.ReLU()]
            c = w
        self.decoder = nn.Sequential(*dec)
        for m in self.modules():
            if isinstance(m, nn.BatchNorm2d):
                with torch.no_grad():
                    m.running_mean.uniform_(-0.2, 0.2)
                    m.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        h = self.encoder(x)
        z = self.to_latent(h.flatten(1))
        h = self.from_latent(z).view(h.shape)
        return torch.sigmoid(self.decoder(h))


def get_inputs():
    return [torch.randn(8, 3, 64, 64)]
