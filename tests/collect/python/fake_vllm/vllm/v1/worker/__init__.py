"""Test double of the vLLM package layout (module paths only); no vLLM code."""
