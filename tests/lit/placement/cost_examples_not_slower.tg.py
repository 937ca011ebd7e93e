# Compares the estimates of cost_examples_not_slower.tg's placements (argument: the files' common prefix).
import json
import sys

prefix = sys.argv[1]
for example in ("logreg", "mlp"):
    seconds = {}
    for strategy in ("cost", "global", "local"):
        with open("%s.%s.%s" % (prefix, example, strategy)) as f:
            placement = json.load(f)["placement"]
        assert placement["strategy"] == strategy, placement
        seconds[strategy] = placement["estimated_seconds"]
    print("%s: cost <= global: %s, cost <= local: %s" % (
        example, seconds["cost"] <= seconds["global"], seconds["cost"] <= seconds["local"]))
