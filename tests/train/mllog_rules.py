"""The MLPerf logging rules dtbench's :::MLLOG files rely on, checked by our own code (train_checks.py).

These are the rules of MLPerf Training 4.0.0's common and open-division compliance files (mlcommons/logging,
mlperf_logging/compliance_checker/training_4.0.0/common.yaml, open_common.yaml, open_resnet.yaml) as far as
a dtbench run can meet them, written from their text, not from their code. MLCommons' checker itself runs
beside dtbench in development (BENCHMARKS.md, "Logs that MLPerf's checker accepts"); this module keeps the
rules in CI, where that checker is not installed.

    problems(path, open_benchmark=True) -> list of strings, empty when the file keeps every rule.

open_benchmark=False skips open_common.yaml's list of benchmark names, which has none for an MLP or a
simple CNN (their logs can keep every other rule).
"""
import json

PREFIX = ":::MLLOG "
EVENT_TYPES = {"INTERVAL_START", "INTERVAL_END", "POINT_IN_TIME"}
EXACTLY_ONE = ["submission_org", "submission_platform", "submission_division", "submission_status",
               "submission_benchmark", "init_stop", "run_start", "run_stop", "train_samples", "eval_samples"]
# open_common.yaml's list of benchmark names; dtbench's ResNets log "resnet".
OPEN_BENCHMARKS = {"resnet", "ssd", "stable_diffusion", "maskrcnn", "gpt3", "dlrm_dcnv2", "bert", "rnnt", "unet3d",
                   "gnn"}
# Minutes from the first init_start to init_stop: 240 in the open division, 30 in the closed.
INIT_MINUTES = {"open": 240, "closed": 30}


def read_events(path):
    """The file's events in order; raises ValueError naming the line for a line that is not an MLLOG event."""
    events = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.startswith(PREFIX):
                raise ValueError(f"{path}:{n}: not an :::MLLOG line")
            e = json.loads(line[len(PREFIX):])
            for field in ("namespace", "time_ms", "event_type", "key", "value", "metadata"):
                if field not in e:
                    raise ValueError(f"{path}:{n}: no {field}")
            if e["event_type"] not in EVENT_TYPES or not isinstance(e["time_ms"], int):
                raise ValueError(f"{path}:{n}: event_type {e['event_type']!r}, time_ms {e['time_ms']!r}")
            if "file" not in e["metadata"] or "lineno" not in e["metadata"]:
                raise ValueError(f"{path}:{n}: metadata without file and lineno")
            e["line"] = n
            events.append(e)
    return events


def problems(path, open_benchmark=True):
    events = read_events(path)
    bad = []
    keys = [e["key"] for e in events]
    first = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    value = {e["key"]: e["value"] for e in events}

    for k in EXACTLY_ONE:
        if keys.count(k) != 1:
            bad.append(f"{k}: {keys.count(k)} events, exactly one required")
    if keys.count("init_start") < 1:
        bad.append("init_start: none")
    if not any(e["key"] == "cache_clear" and "value" in e for e in events):
        bad.append("cache_clear: none with a value")
    if bad:
        return bad  # the ordering rules below need these events

    if value["submission_org"] == "" or value["submission_platform"] == "":
        bad.append("submission_org and submission_platform must not be empty")
    division = value["submission_division"]
    if division not in INIT_MINUTES:
        bad.append(f"submission_division {division!r}")
    if value["submission_status"] not in ("cloud", "onprem", "preview", "research"):
        bad.append(f"submission_status {value['submission_status']!r}")
    if open_benchmark and division == "open" and value["submission_benchmark"] not in OPEN_BENCHMARKS:
        bad.append(f"submission_benchmark {value['submission_benchmark']!r} is not an open-division benchmark")

    init_stop, run_start, run_stop = first["init_stop"], first["run_start"], first["run_stop"]
    # The division sets the init window, so it must come before init_stop.
    if first["submission_division"] > init_stop:
        bad.append("submission_division after init_stop")
    for i, k in enumerate(keys):
        if k == "init_start" and i > init_stop:
            bad.append(f"line {events[i]['line']}: init_start after init_stop")
    if not init_stop < run_start < run_stop:
        bad.append("init_stop, run_start and run_stop out of order")
    window = events[init_stop]["time_ms"] - events[first["init_start"]]["time_ms"]
    if division in INIT_MINUTES and window >= INIT_MINUTES[division] * 60e3:
        bad.append(f"init took {window} ms, the {division} division allows {INIT_MINUTES[division]} minutes")
    if "status" not in events[run_stop]["metadata"]:
        bad.append("run_stop without a status")

    for k in ("epoch_start", "epoch_stop", "eval_start", "eval_stop", "eval_accuracy"):
        for e in events:
            if e["key"] == k and "epoch_num" not in e["metadata"]:
                bad.append(f"line {e['line']}: {k} without epoch_num")
    if "epoch_start" not in keys and "block_start" not in keys:
        bad.append("neither epoch_start nor block_start")
    if "epoch_stop" not in keys and "block_stop" not in keys:
        bad.append("neither epoch_stop nor block_stop")
    accuracies = [e["value"] for e in events if e["key"] == "eval_accuracy"]
    if not accuracies:
        bad.append("eval_accuracy: none")
    elif value["submission_benchmark"] == "resnet" and not any(a < 1.0 for a in accuracies):
        bad.append("eval_accuracy: none below 1.0 (open_resnet.yaml)")
    times = [e["time_ms"] for e in events]
    if any(b < a for a, b in zip(times, times[1:])):
        bad.append("time_ms goes backwards")

    # dtbench's own, stricter than the checker (which takes an epoch_stop without its epoch_start, and a run_stop
    # "success" whatever the evaluations said): every epoch_stop ends the epoch_start before it, of the same
    # epoch_num, none starts while one is open and none is open at run_stop; and "success" needs an
    # eval_accuracy in the file at or above the target the file states (dtbench_target_accuracy; 0: none).
    # And an evaluation's epoch_num lies in the epoch open when it is logged ([n, n + 1]), or is the end of the one
    # just closed: an asynchronous run's, counted by the updates applied, fell a whole epoch outside the epochs logged
    # by rank 0's own steps (found by a hunt).
    epoch, closed = None, None
    for e in events:
        if e["key"] == "eval_accuracy":
            at = e["metadata"].get("epoch_num")
            inside = epoch is not None and epoch <= at <= epoch + 1
            if not inside and not (epoch is None and closed is not None and abs(at - (closed + 1)) < 1e-9):
                bad.append(f"line {e['line']}: eval_accuracy of epoch {at} outside the epoch logged "
                           f"({'epoch ' + str(epoch) + ' open' if epoch is not None else 'none open'})")
        if e["key"] == "epoch_start":
            if epoch is not None:
                bad.append(f"line {e['line']}: epoch_start while epoch {epoch} is open")
            epoch = e["metadata"].get("epoch_num")
        elif e["key"] == "epoch_stop":
            if epoch is None or e["metadata"].get("epoch_num") != epoch:
                bad.append(f"line {e['line']}: epoch_stop of epoch {e['metadata'].get('epoch_num')} without its "
                           f"epoch_start")
            epoch, closed = None, epoch
        elif e["key"] == "run_stop" and epoch is not None:
            bad.append(f"line {e['line']}: run_stop while epoch {epoch} is open")
    target = value.get("dtbench_target_accuracy") or 0
    if events[run_stop]["metadata"].get("status") == "success" and target > 0 and \
            not any(a >= target for a in accuracies):
        bad.append(f"run_stop says success, but no eval_accuracy reached the target {target}")
    # And the timed run ends at the first evaluation at the target (MLPerf's): none after it, and not "aborted".
    reached = [i for i, e in enumerate(events) if e["key"] == "eval_accuracy" and target > 0 and e["value"] >= target]
    if reached:
        if events[run_stop]["metadata"].get("status") != "success":
            bad.append(f"run_stop says {events[run_stop]['metadata'].get('status')}, but line {events[reached[0]]['line']}"
                       f" reached the target {target}")
        if len(reached) > 1 or any(e["key"] == "eval_accuracy" for e in events[reached[0] + 1:]):
            bad.append(f"evaluations logged after line {events[reached[0]]['line']}, which reached the target {target}")
    return bad
