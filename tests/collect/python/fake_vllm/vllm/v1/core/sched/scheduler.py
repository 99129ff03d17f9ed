"""A scripted scheduler with vLLM v1's class and method names.

Each schedule() call pops the next planned step: a list of (req_id, tokens, is_new).
"""
from vllm.v1.core.sched.output import CachedRequestData, NewRequestData, SchedulerOutput


class Scheduler(object):
    def __init__(self, plan):
        self.plan = list(plan)

    def schedule(self):
        step = self.plan.pop(0)
        new = [NewRequestData(rid, list(range(n))) for rid, n, is_new in step if is_new]
        cached = CachedRequestData(req_ids=[rid for rid, n, is_new in step if not is_new])
        tokens = {rid: n for rid, n, _ in step}
        return SchedulerOutput(new, cached, tokens, sum(tokens.values()))

    def has_requests(self):
        return bool(self.plan)

    def update_from_output(self, scheduler_output, model_runner_output):
        return {"finished": [], "n": len(scheduler_output.num_scheduled_tokens)}
