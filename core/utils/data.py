"""``ember.utils.data``: the same module as ``ember.data``, under torch's path."""
import sys as _sys

import ember.data as _data

_sys.modules[__name__] = _data
