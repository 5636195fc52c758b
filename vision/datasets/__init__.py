"""ember.vision.datasets: ImageFolder, CIFAR and MNIST formats."""
