"""``ember.nn.functional``: the stateless ops behind the nn modules, each with autograd.

One file per family (forward and backward side by side):

- ``conv``: conv1d/2d/3d, conv_transpose1d/2d, unfold/fold
- ``pooling``: max/avg/adaptive pools
- ``sampling``: interpolate, grid_sample, pad, pixel_shuffle/unshuffle
- ``normalization``: batch/layer/group/instance/rms norms, local_response_norm, normalize
- ``dropout``: dropout, dropout1d/2d/3d, alpha_dropout
- ``activation``: relu ... softmin, and distances (cosine_similarity, pairwise_distance, cdist)
- ``linear``: linear, bilinear
- ``sparse``: embedding, embedding_bag, one_hot
- ``attention``: scaled_dot_product_attention, multi_head_attention_forward
- ``loss``: the loss functions
"""
from .activation import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .sampling import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403

# The families `dropout` and `linear` share a name with a function they define: bind the
# functions last so that ``F.dropout``/``F.linear`` never resolve to the submodules.
from .dropout import dropout  # noqa: E402,F811
from .linear import linear  # noqa: E402,F811
