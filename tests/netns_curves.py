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

# Inter-node, one-way µs, per round (3 rounds under chrt -f 10) on netns-4x1-1gbe (2026-12-04,
# Intel Xeon VM, 2 cores): up to 1 KiB the rounds lay between 6.0 and 8.5 µs in no order.
ROUNDS_SIZES = NOISY_SIZES
ROUNDS_TIMES = (
    (6.859, 6.78, 6.118), (7.938, 7.987, 7.008), (7.913, 7.755, 6.991), (7.681, 7.972, 7.484),
    (7.043, 7.942, 7.283), (7.446, 7.924, 7.349), (6.111, 7.841, 6.834), (6.168, 7.878, 8.24),
    (6.05, 8.042, 7.258), (6.972, 7.932, 7.505), (7.202, 8.093, 8.183), (6.571, 6.874, 8.486),
    (8.927, 8.91, 9.001), (17.383, 17.302, 17.217), (34.528, 34.414, 34.445),
    (68.565, 68.568, 68.788), (137.048, 136.989, 134.643), (274.29, 269.841, 270.448),
    (541.276, 539.216, 535.834), (1077.918, 1087.006, 1084.65), (2461.93, 2469.586, 2494.087),
    (6858.426, 6880.509, 6894.244), (15633.899, 15661.046, 15690.306),
    (33331.491, 33284.61, 33209.045),
)  # fmt: skip
