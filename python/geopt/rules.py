"""geopt.rules: check rule files, run their tests, and see where they match (`geopt rules`)."""

import json

from . import _fill_rules, _fill_target, _geopt, _source, _strings


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


def test(paths=None, *, soundness=False, soc_version="Ascend910B1", precision_mode=None, profile_set=None,
         modify_mixlist=None, enable_small_channel=False, buffer_optimize="l2_optimize", disable=None,
         fusion_switch_file=None, iter_limit=None, node_limit=None, time_limit=None):
    """Runs the rules' test blocks (default: the shipped rules') through the optimize pipeline.

    Returns the report as a dict: "tests" (rule, test, passed, failures), "passed",
    "failed", and with soundness=True "soundness"; failures are reported, not raised."""
    o = _geopt.RuleTestOptions()
    _fill_rules(o.rules, paths, disable, fusion_switch_file, iter_limit, node_limit, time_limit)
    _fill_target(o.target, soc_version, profile_set, precision_mode, modify_mixlist, enable_small_channel,
                 buffer_optimize)
    o.soundness = bool(soundness)
    return json.loads(_geopt.rules_test(o).report_json)


def match(model, rules=None, *, disable=None, fusion_switch_file=None):
    """Where each rule matches in `model`: {rule: [node names]}."""
    o = _geopt.RuleOptions()
    _fill_rules(o, rules, disable, fusion_switch_file, None, None, None)
    return json.loads(_geopt.rules_match(_source(model), o).report_json)
