#!/usr/bin/python3
"""Writes the values geopt_cost_fit printed ("as --set arguments: --set SOC:KEY=VALUE ...")
into backends/ascend/profiles/SOC.toml, keeping each line's comment, and carries them to
the chips of the same family that have no published figures of their own (Ascend910B2's
to Ascend910B1 and Ascend910B3, Ascend310P3's to Ascend310).

    /usr/bin/python3 bench/cost_fit_apply.py FIT_OUTPUT
"""
import os
import re
import sys

CARRY = {"Ascend910B2": ["Ascend910B1", "Ascend910B3"], "Ascend310P3": ["Ascend310"]}
PROFILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "backends", "ascend", "profiles")


def set_value(path, key, value):
    text = open(path).read()
    section, leaf = key.split(".")
    start = text.index(f"[{section}]")
    end = text.find("\n[", start + 1)
    end = len(text) if end < 0 else end
    shown = "%.4g" % value
    if not re.search(r"[.e]", shown):
        shown += ".0"  # a float in TOML, as the loader reads these keys
    body, n = re.subn(rf"(?m)^({re.escape(leaf)}\s*=\s*)\S+", lambda m: m.group(1) + shown, text[start:end], count=1)
    if n != 1:
        sys.exit(f"{path}: no key {key}")
    open(path, "w").write(text[:start] + body + text[end:])
    return shown


def main():
    fit = open(sys.argv[1]).read()
    line = re.search(r"as --set arguments:(.*)", fit)
    if not line:
        sys.exit(f"{sys.argv[1]}: no 'as --set arguments:' line (run geopt_cost_fit with --fit)")
    for soc, key, value in re.findall(r"--set (\S+?):(\S+?)=(\S+)", line.group(1)):
        for target in [soc] + CARRY.get(soc, []):
            shown = set_value(os.path.join(PROFILES, target + ".toml"), key, float(value))
            print(f"{target}: {key} = {shown}")


if __name__ == "__main__":
    main()
