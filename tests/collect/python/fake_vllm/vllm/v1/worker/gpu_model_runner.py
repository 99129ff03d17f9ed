"""GPUModelRunner with vLLM v1's method names. execute_model raises when a request id
starts with "boom", so the test can check that exceptions pass through unchanged."""
from vllm.v1.sample.sampler import Sampler


class ModelRunnerFailure(RuntimeError):
    pass


class GPUModelRunner(object):
    def __init__(self):
        self.sampler = Sampler()

    def execute_model(self, scheduler_output, intermediate_tensors=None):
        ids = list(scheduler_output.num_scheduled_tokens)
        if any(i.startswith("boom") for i in ids):
            raise ModelRunnerFailure("injected failure in " + ",".join(ids))
        logits = [[float(len(i)), 1.0] for i in ids]
        return self.sampler(logits)
