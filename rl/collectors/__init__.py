"""``ember.rl.collectors``: data collectors that run a policy in environments and yield
TensorDicts of transitions (``SyncDataCollector`` in this process, ``MultiSyncDataCollector``
over worker processes), and ``split_trajectories``."""
from .multi import MultiSyncDataCollector
from .sync import DEFAULT_EXPLORATION_TYPE, DataCollectorBase, RandomPolicy, SyncDataCollector
from .utils import split_trajectories

__all__ = ["DEFAULT_EXPLORATION_TYPE", "DataCollectorBase", "MultiSyncDataCollector",
           "RandomPolicy", "SyncDataCollector", "split_trajectories"]
