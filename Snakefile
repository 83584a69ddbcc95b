# wmdeval: the kNN document-classification benchmark of Word Mover's Distance against
# BOW and TF-IDF baselines, as re-evaluated by Sato, Yamada and Kashima (ICML 2022).
# The stages below follow the experiment of docs/protocol.md in order. Each rule's shell line
# is `wmdeval <command>`; workflow/wmdeval/cli.py maps every command to the function it runs
# (docs/architecture.md draws the package's layers).


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
# 0. Downloads: remote files into resources/, checksummed (code: wmdeval/ingest/download.py)
include: "workflow/rules/download.smk"
# 1. Datasets: corpora -> documents + train/test splits; embeddings (code: wmdeval/ingest/)
include: "workflow/rules/ingest.smk"
# 2. Duplicates: exact duplicate groups and the clean variant (wmdeval/cleaning/duplicates.py)
include: "workflow/rules/duplicates.smk"
# 3. Vocabulary: out-of-vocabulary filter, variants (code: wmdeval/cleaning/vocabulary.py)
include: "workflow/rules/vocabulary.smk"
# 4. Distances: WMD and WMD-TF-IDF, exact optimal transport solved in stored blocks
#    (code: wmdeval/distances/; job resources: wmdeval/planning/)
include: "workflow/rules/distances.smk"
# 4b. Distances beyond the paper (WCD, RWMD, cosine of mean vectors) and your own
#     (document vectors, precomputed matrices, Python callables) (code: wmdeval/distances/)
include: "workflow/rules/methods.smk"
# 5. Classifiers: kNN and weighted kNN tuned on validation, every method and fold
#    (code: wmdeval/classification/)
include: "workflow/rules/evaluate.smk"
# 6. Outputs: scores, the paper's tables and figures (code: wmdeval/reporting/)
include: "workflow/rules/report.smk"
# 7. Beyond the paper: how different are the distances really? (code: wmdeval/analyses/)
include: "workflow/rules/analysis.smk"
# 8. Which differences are real: McNemar, bootstrap, Friedman/Nemenyi (wmdeval/analyses/)
include: "workflow/rules/significance.smk"


rule all:
    default_target: True
    input:
        final_outputs(),


# Results that mean little (k above the training documents), said once more at the end.
onsuccess:
    result_warnings()


# Every job's priority: the expected seconds from its start to the plan's end, so that
# Snakemake starts the jobs of the critical path first (common.smk: planned_priority).
for _rule in workflow.rules:
    _rule.priority = planned_priority(_rule.name)
