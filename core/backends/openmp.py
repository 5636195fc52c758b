"""``ember.backends.openmp``: ember's CPU parallelism is its own thread pool
(``ember.set_num_threads``), not OpenMP."""


def is_available():
    return False
