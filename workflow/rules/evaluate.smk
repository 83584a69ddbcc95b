# Stage 5: kNN and weighted kNN, tuned on a validation split, for every method and
# every fold; the scores, and the per-document predictions the significance tests use. The 12 BOW/TF-IDF baseline distances are computed inside this job: they are
# cheap, and the TF-IDF ones depend on the fold's training documents.
# Code: workflow/wmdeval/classification/knn.py.


# A dataset whose evaluation is one part (evaluate_parts; every paper dataset, the demo):
# one job, every method.
rule evaluate:
    input:
        # per transport method its matrix, or in knn mode its neighbour table; the
        # matrix of every dense method
        unpack(evaluate_inputs),
    output:
        scores="results/{dataset}/{variant}/scores.parquet",
        predictions="results/{dataset}/{variant}/predictions.parquet",
    log:
        logged("{dataset}/{variant}/evaluate"),
    benchmark:
        benchmarked("{dataset}/{variant}/evaluate")
    wildcard_constraints:
        dataset=names_regex(WHOLE_DATASETS),
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        # one dense matrix at a time (float64 n x n), or without any (knn mode) the
        # blocks of rankings and the neighbour tables' pairs
        mem_mb=evaluate_job_mem_mb,
        runtime=60,
    params:
        settings=spec_json(config["evaluation"]),
        wmd=evaluate_wmd,
        neighbours=evaluate_neighbours,
    shell:
        "wmdeval evaluate --documents {input.documents} --splits {input.splits}"
        " --wmd {params.wmd:q} {params.neighbours} --settings {params.settings:q}"
        " --dataset {wildcards.dataset}"
        " --variant {wildcards.variant} --out {output.scores}"
        " --out-predictions {output.predictions} 2> {log}"


# A dataset whose evaluation is cut into parts (evaluate_parts): each part the rows of a
# run of consecutive methods (table order) over every fold, reading only their inputs.
rule evaluate_part:
    input:
        unpack(evaluate_part_inputs),
    output:
        scores="results/{dataset}/{variant}/evaluate_parts/{part}.scores.parquet",
        predictions="results/{dataset}/{variant}/evaluate_parts/{part}.predictions.parquet",
    log:
        logged("{dataset}/{variant}/evaluate/{part}"),
    benchmark:
        benchmarked("{dataset}/{variant}/evaluate/{part}")
    wildcard_constraints:
        dataset=names_regex(PARTED_DATASETS),
        part=r"\d+-of-\d+",
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        # the part's own dense matrices or neighbour tables (evaluate_job_mem_mb)
        mem_mb=evaluate_job_mem_mb,
        runtime=60,
    params:
        settings=spec_json(config["evaluation"]),
        wmd=evaluate_part_wmd,
        neighbours=evaluate_part_neighbours,
        methods=lambda wildcards: spec_json(evaluate_part_slugs(wildcards)),
    shell:
        "wmdeval evaluate --documents {input.documents} --splits {input.splits}"
        " --wmd {params.wmd:q} {params.neighbours} --settings {params.settings:q}"
        " --methods {params.methods:q} --dataset {wildcards.dataset}"
        " --variant {wildcards.variant} --out {output.scores}"
        " --out-predictions {output.predictions} 2> {log}"


# The parts' rows, concatenated in method order: the bytes one evaluate job writes. A part
# missing a method, or two parts with the same one, stop the job.
rule gather_evaluate:
    input:
        scores=lambda wildcards: evaluate_part_files(wildcards, "scores"),
        predictions=lambda wildcards: evaluate_part_files(wildcards, "predictions"),
    output:
        scores="results/{dataset}/{variant}/scores.parquet",
        predictions="results/{dataset}/{variant}/predictions.parquet",
    log:
        logged("{dataset}/{variant}/gather_evaluate"),
    benchmark:
        benchmarked("{dataset}/{variant}/gather_evaluate")
    wildcard_constraints:
        dataset=names_regex(PARTED_DATASETS),
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        expect=evaluate_expect,
    shell:
        "wmdeval gather-evaluate --scores {input.scores} --predictions"
        " {input.predictions} --expect {params.expect:q} --out {output.scores}"
        " --out-predictions {output.predictions} 2> {log}"


# Paper Tables 4/5: the baselines with every word kept (raw-text datasets only); WMD can
# only use words with an embedding, so it is not part of this evaluation.
rule select_variant_allwords:
    input:
        unpack(allwords_variant_inputs),
    output:
        documents="results/{dataset}/{variant}/allwords/documents.parquet",
        splits="results/{dataset}/{variant}/allwords/splits.parquet",
    log:
        logged("{dataset}/{variant}/allwords/select_variant"),
    benchmark:
        benchmarked("{dataset}/{variant}/allwords/select_variant")
    wildcard_constraints:
        dataset=names_regex(TEXT_DATASETS),
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        kept=lambda wildcards, input: (
            f"--kept {input.kept}" if "kept" in input.keys() else ""
        ),
    shell:
        "wmdeval select-variant --documents {input.documents} --splits {input.splits}"
        " {params.kept} --out-documents {output.documents} --out-splits {output.splits}"
        " 2> {log}"


rule evaluate_allwords:
    input:
        documents="results/{dataset}/{variant}/allwords/documents.parquet",
        splits="results/{dataset}/{variant}/allwords/splits.parquet",
    output:
        "results/{dataset}/{variant}/allwords/scores.parquet",
    log:
        logged("{dataset}/{variant}/allwords/evaluate"),
    benchmark:
        benchmarked("{dataset}/{variant}/allwords/evaluate")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        settings=spec_json(config["evaluation"]),
    shell:
        "wmdeval evaluate --documents {input.documents} --splits {input.splits}"
        " --wmd '{{}}' --settings {params.settings:q} --dataset {wildcards.dataset}"
        " --variant {wildcards.variant} --out {output} 2> {log}"
