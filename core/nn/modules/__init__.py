"""``ember.nn.modules``: Module and the layers, one family per file."""
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .flatten import Flatten, Identity, Unflatten
from .linear import Bilinear, Linear
from .module import Module, RemovableHandle
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase

__all__ = ["Module", "RemovableHandle", "Sequential", "ModuleList", "ModuleDict",
           "ParameterList", "ParameterDict", "Identity", "Flatten", "Unflatten", "Linear",
           "Bilinear", "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell",
           "GRUCell"]
