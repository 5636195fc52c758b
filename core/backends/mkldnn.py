"""``ember.backends.mkldnn``: ember does not use oneDNN (MKL-DNN)."""
enabled = False


def is_available():
    return False
