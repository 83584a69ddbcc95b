# wmdeval: the kNN document-classification benchmark of Word Mover's Distance against
# BOW and TF-IDF baselines, as re-evaluated by Sato, Yamada and Kashima (ICML 2022).
# The stages below follow the experiment of docs/protocol.md in order.


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
# 0. Downloads: remote files into resources/, checksummed
include: "workflow/rules/download.smk"
# 1. Datasets: corpora -> documents + train/test splits; embeddings
include: "workflow/rules/ingest.smk"
# 2. Duplicates: exact duplicate groups and the clean variant
include: "workflow/rules/duplicates.smk"
# 3. Vocabulary: out-of-vocabulary filter, variants
include: "workflow/rules/vocabulary.smk"
# 4. Distances: WMD and WMD-TF-IDF, exact optimal transport solved in stored blocks
include: "workflow/rules/distances.smk"
# 5. Classifiers: kNN and weighted kNN tuned on validation, every method and fold
include: "workflow/rules/evaluate.smk"
# 6. Outputs: scores, the paper's tables and figures
include: "workflow/rules/report.smk"
# 7. Beyond the paper: how different are the distances really?
include: "workflow/rules/analysis.smk"


rule all:
    default_target: True
    input:
        final_outputs(),
