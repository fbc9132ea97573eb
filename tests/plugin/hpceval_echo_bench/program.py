"""The echo benchmark's program: one JSON line per repetition, a rate and a time."""

import argparse
import json

parser = argparse.ArgumentParser()
parser.add_argument("--rate", type=float, required=True)
parser.add_argument("--rep", type=int, required=True)
args = parser.parse_args()
# A spread of 1 % between repetitions, so that the comparison has an interval.
rate = args.rate * (1 + 0.01 * args.rep)
print(json.dumps({"record": "header", "program": "echo"}))
print(json.dumps({"record": "point", "rep": args.rep, "rate": rate, "time": 1000 / rate}))
