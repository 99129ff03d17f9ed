"""Collectives with torch.distributed's names and parameter names."""
__all__ = ["all_reduce", "broadcast", "barrier"]


def all_reduce(tensor, op=None, group=None, async_op=False):
    return tensor


def broadcast(tensor, src, group=None, async_op=False):
    return tensor


def barrier(group=None, async_op=False, device_ids=None):
    return None


def all_gather(tensor_list, tensor, group=None, async_op=False):
    return None


def reduce_scatter(output, input_list, op=None, group=None, async_op=False):
    return None


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    return None


__all__ += ["all_gather", "reduce_scatter", "all_to_all"]
