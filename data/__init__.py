"""ember.data: composable, resumable DataPipes and a multi-process DataLoader over fsspec.

    >>> from ember.data import DataLoader, IterableWrapper
    >>> dp = IterableWrapper(range(100)).shuffle(seed=0).sharding_filter().map(lambda x: x * 2)
    >>> batches = list(DataLoader(dp, batch_size=32, seed=0))
    >>> [b.shape for b in batches]
    [(32,), (32,), (32,), (4,)]
"""
# every module that registers pipes is imported below (the registry fills on import)
from .archives import TarArchiveLoader, WebDataset, ZipArchiveLoader
from .batching import Batcher, BucketBatcher, Grouper, Unbatcher
from .cache import InMemoryCacheHolder, Prefetcher
from .collate import Ragged, collate_arrays, default_collate, default_convert, shared_empty
from .combine import Concater, Cycler, Multiplexer, MultiplexerLongest, Zipper
from .datasets import ChainDataset, ConcatDataset, StackDataset, Subset, TensorDataset, \
    random_split
from .errors import Skipped, drain_skips
from .files import FileLister, FileOpener, HttpReader, Saver, Stream
from .fork import Demultiplexer, Forker
from .loader import DataLoader
from .mappipes import MapBatcher, MapConcater, MapMapper, MapShuffler, MapToIter, MapZipper, \
    SequenceWrapper
from .procs import WorkerError
from .pipe import DataPipe, IterDataPipe, MapDataPipe, PipeIter, get_pipe, list_pipes, register
from .readers import CSVParser, JsonLinesParser, LineReader
from .samplers import BatchSampler, DistributedSampler, RandomSampler, Sampler, \
    SequentialSampler, SubsetRandomSampler, WeightedRandomSampler
from .shuffle import ShardingFilter, Shuffler
from .sources import IterableWrapper
from .transforms import Collator, Enumerator, FlatMapper, Filter, Header, Mapper, Rows2Columnar
from .worker import WorkerInfo, get_worker_info

Dataset = MapDataPipe  # torch-style names for user classes
IterableDataset = IterDataPipe

__all__ = [
    "Batcher", "BatchSampler", "BucketBatcher", "ChainDataset", "collate_arrays", "Collator",
    "ConcatDataset", "Concater", "CSVParser", "Cycler", "DataLoader", "DataPipe", "Dataset", "default_collate",
    "default_convert", "Demultiplexer", "DistributedSampler", "drain_skips", "Enumerator",
    "FileLister", "FileOpener", "Filter", "FlatMapper", "Forker", "get_pipe", "get_worker_info",
    "Grouper", "Header", "HttpReader", "InMemoryCacheHolder", "IterableDataset",
    "IterableWrapper", "IterDataPipe", "JsonLinesParser", "LineReader", "list_pipes",
    "MapBatcher", "MapConcater", "MapDataPipe", "MapMapper", "Mapper", "MapShuffler",
    "MapToIter", "MapZipper", "Multiplexer", "MultiplexerLongest", "PipeIter", "Prefetcher",
    "Ragged", "random_split", "RandomSampler", "register", "Rows2Columnar", "Sampler", "Saver",
    "SequenceWrapper", "SequentialSampler", "shared_empty", "ShardingFilter", "Shuffler",
    "Skipped", "StackDataset", "Stream", "Subset", "SubsetRandomSampler", "TarArchiveLoader",
    "TensorDataset", "Unbatcher", "WebDataset",
    "WeightedRandomSampler", "WorkerError", "WorkerInfo", "ZipArchiveLoader", "Zipper",
]
