"""Re-exports the collectives at import time, as torch.distributed does."""
from .distributed_c10d import *  # noqa: F401,F403
