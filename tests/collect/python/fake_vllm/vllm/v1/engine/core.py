"""EngineCore with vLLM v1's step(): schedule, execute, update."""
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.worker.gpu_model_runner import GPUModelRunner


class EngineCore(object):
    def __init__(self, plan):
        self.scheduler = Scheduler(plan)
        self.model_runner = GPUModelRunner()

    def step(self):
        if not self.scheduler.has_requests():
            return {}, False
        out = self.scheduler.schedule()
        result = self.model_runner.execute_model(out)
        return self.scheduler.update_from_output(out, result), True
