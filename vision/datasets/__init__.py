"""ember.vision.datasets: ImageFolder/DatasetFolder, CIFAR10/100, MNIST/FashionMNIST/KMNIST,
FakeData (each a ``MapDataPipe``) and download/extract helpers."""
from .cifar import CIFAR10, CIFAR100  # noqa: F401
from .fakedata import FakeData  # noqa: F401
from .folder import IMG_EXTENSIONS, DatasetFolder, ImageFolder, default_loader  # noqa: F401
from .mnist import KMNIST, MNIST, FashionMNIST, read_idx  # noqa: F401
from .utils import (check_integrity, download_and_extract_archive, download_url,  # noqa: F401
                    extract_archive)
from .vision import VisionDataset  # noqa: F401

__all__ = ['CIFAR10', 'CIFAR100', 'DatasetFolder', 'FakeData', 'FashionMNIST', 'IMG_EXTENSIONS',
           'ImageFolder', 'KMNIST', 'MNIST', 'VisionDataset', 'check_integrity', 'default_loader',
           'download_and_extract_archive', 'download_url', 'extract_archive', 'read_idx']
