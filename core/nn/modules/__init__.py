"""``ember.nn.modules``: Module and the layers, one family per file."""
from .activation import *  # noqa: F401,F403
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .flatten import Flatten, Identity, Unflatten
from .linear import Bilinear, Linear
from .loss import *  # noqa: F401,F403
from .module import Module, RemovableHandle
from .normalization import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .sampling import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
