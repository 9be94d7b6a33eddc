"""geopt.rules: check rule files, run their tests, and see where they match (`geopt rules`)."""

import json
import os

from . import _geopt, _input_shape, _source, _strings  # noqa: F401


def check(paths=None):
    """Parses and checks .gerule files or folders (default: the shipped rules).

    Returns {"rules": N, "files": M, "errors": []}; with errors, raises geopt.BadInput
    whose .file/.line/.col are the first error's and whose .errors lists them all."""
    r = _geopt.rules_check(_strings(paths, "paths"))
    report = json.loads(r.report_json)
    if not r.ok:
        first = report["errors"][0]
        e = _geopt.BadInput("%d error(s) in the rules:\n%s" % (len(report["errors"]), r.report_text.rstrip()))
        e.file, e.line, e.col, e.node = first["file"], first["line"], first["col"], None
        e.errors = report["errors"]
        raise e
    return report


def test(paths=None, *, soundness=False, soc_version="Ascend910B1", precision_mode=None, iter_limit=None,
         node_limit=None, time_limit=None):
    """Runs the rules' test blocks (default: the shipped rules') through the optimize pipeline.

    Returns the report as a dict: "tests" (rule, test, passed, failures), "passed",
    "failed", and with soundness=True "soundness"."""
    o = _geopt.RuleTestOptions()
    o.rules.paths = _strings(paths, "paths")
    o.rules.iter_limit = iter_limit
    o.rules.node_limit = node_limit
    o.rules.time_limit = time_limit
    o.target.soc_version = os.fspath(soc_version)
    o.target.precision_mode = precision_mode
    o.soundness = bool(soundness)
    return json.loads(_geopt.rules_test(o).report_json)


def match(model, rules=None, *, disable=None):
    """Where each rule matches in `model`: {rule: [node names]}."""
    o = _geopt.RuleOptions()
    o.paths = _strings(rules, "rules")
    o.disable = _strings(disable, "disable")
    return json.loads(_geopt.rules_match(_source(model), o).report_json)
