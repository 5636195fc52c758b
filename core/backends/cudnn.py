"""``ember.backends.cudnn``: accepted for torch code; ember has no cuDNN (see
``ember.backends``). The flags keep what is assigned to them and change nothing."""
benchmark = False
deterministic = False
enabled = True
allow_tf32 = True


def is_available():
    return False


def version():
    return None
