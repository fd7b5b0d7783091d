"""Validates a dtbench run record against results/schema/run-record.schema.json, then checks that the
schema rejects records broken in the ways a writer could break them (so this test can fail)."""
import copy
import json
import sys

import jsonschema

schema = json.load(open(sys.argv[1]))
jsonschema.Draft7Validator.check_schema(schema)
validator = jsonschema.Draft7Validator(schema)
failures = 0
for path in sys.argv[2:]:
    record = json.load(open(path))
    errors = sorted(validator.iter_errors(record), key=lambda e: list(e.path))
    for e in errors:
        print(f"{path}: /{'/'.join(map(str, e.path))}: {e.message}")
    failures += len(errors)

    def broken(mutate):
        r = copy.deepcopy(record)
        mutate(r)
        return not validator.is_valid(r)

    checks = {
        "unknown status": lambda r: r.__setitem__("status", "finished"),
        "missing provenance": lambda r: r.pop("provenance"),
        "negative steps": lambda r: r.__setitem__("steps", -1),
        "accuracy above 1": lambda r: r["curve"].append(dict(r["curve"][0], test_accuracy=1.5)) if r["curve"] else r.__setitem__("curve", [{}]),
        "reached without seconds": lambda r: r.__setitem__("time_to_accuracy", {"target": 0.9, "reached": True}),
        "unknown top-level key": lambda r: r.__setitem__("surprise", 1),
    }
    for name, mutate in checks.items():
        if not broken(mutate):
            print(f"{path}: schema accepted a record with {name}")
            failures += 1
print("record schema:", "ok" if failures == 0 else f"{failures} problem(s)")
sys.exit(1 if failures else 0)
