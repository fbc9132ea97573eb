"""Projection at scale by simulation: SimGrid SMPI platforms, calibration and runs.

- `platform`: a simulated cluster (nodes x cores, per-core speed, intra-node loopback and
  inter-node links, backbone and its contention model) and its SimGrid platform XML;
- `profiles`: the published platform profiles shipped in `hpceval/data/profiles`;
- `sources`: the curves and speeds a calibration is fitted on, from the results store or a
  profile;
- `calibrate`: SMPI's piecewise latency/bandwidth factors and the host speed fitted by
  iterating real `smpirun` executions until the simulated PingPong matches the target;
- `runner`: `hpceval simulate` itself (build with smpicc, run through the `smpi` launcher,
  store the results as origin "simulated" tied to their calibration).
"""
