"""A PingPong curve measured on netns-4x1-1gbe (2026-12-03, AMD EPYC VM, 2 cores), and what
SMPI's token-bucket plugin made of it: real figures the calibration tests replay."""

# Inter-node, one-way µs, medians over 3 rounds: from 0 to 2 KiB in no order (each round's
# moved by ±15 %), then the 1 GbE-shaped link (twice its rate up to twice the bucket).
NOISY_SIZES = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384,
               32768, 65536, 131072, 262144, 524288, 1048576, 2097152, 4194304)  # fmt: skip
NOISY_TIMES = (12.63, 12.98, 12.87, 12.46, 13.64, 13.94, 12.2, 12.1, 13.42, 12.03, 12.97,
               13.95, 13.98, 21.66, 33.65, 67.35, 134.5, 269.5, 527.9, 1074.0, 2479.0, 6885.0,
               15680.0, 33260.0)  # fmt: skip
# The transfer time smpirun gave each size on that platform (SimGrid 3.32, the bucket
# plugin, bandwidth factors 1): its simulated time less the latency it was given.
BUCKET_TRANSFER_US = (0.0, 0.0, 0.0, 0.0, 0.0, 0.01, 0.01, 0.03, 0.06, 0.13, 0.25, 0.51,
                      1.02, 8.38, 26.3, 71.07, 142.7, 286.1, 572.8, 1145.3, 2389.0, 6778.0,
                      15550.0, 33090.0)  # fmt: skip
