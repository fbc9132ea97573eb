"""Study recipes: the published evaluations (EC2-CC, Magellan, CSC, AIST) as declarative files
run on the user's platforms (`hpceval study`, docs/studies.md).

- `recipe`: the recipe model and loading (errors name file and field);
- `scale`: the design scaled down to a platform, with a note per change;
- `runner`: a study run: one stored run per platform, grouped, resumable;
- `answers`: the study's conclusions as questions answered with a confidence interval;
- `published`: the published figures and ratios, each with its source;
- `report`: the Markdown report.
"""
