"""``ember.nn.modules``: Module and the layers, one family per file."""
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .flatten import Flatten, Identity, Unflatten
from .linear import Bilinear, Linear
from .module import Module, RemovableHandle

__all__ = ["Module", "RemovableHandle", "Sequential", "ModuleList", "ModuleDict",
           "ParameterList", "ParameterDict", "Identity", "Flatten", "Unflatten", "Linear",
           "Bilinear"]
