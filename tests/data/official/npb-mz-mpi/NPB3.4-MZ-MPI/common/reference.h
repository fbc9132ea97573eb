/* The verified value: sum of 1/i^2 for i = 1..MIMIC_TERMS. */
#define MIMIC_TERMS 200000
#define MIMIC_REFERENCE 1.6449290668607415
