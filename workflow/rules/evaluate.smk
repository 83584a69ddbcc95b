# Stage 5: kNN and weighted kNN, tuned on a validation split, for all 14 methods and
# every fold. The 12 BOW/TF-IDF baseline distances are computed inside this job: they are
# cheap, and the TF-IDF ones depend on the fold's training documents.


rule evaluate:
    input:
        documents="results/{dataset}/{variant}/documents.parquet",
        splits="results/{dataset}/{variant}/splits.parquet",
        wmd="results/{dataset}/{variant}/distances/wmd.parquet",
        wmd_tfidf="results/{dataset}/{variant}/distances/wmd-tfidf.parquet",
    output:
        "results/{dataset}/{variant}/scores.parquet",
    log:
        logged("{dataset}/{variant}/evaluate"),
    benchmark:
        benchmarked("{dataset}/{variant}/evaluate")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        settings=spec_json(config["evaluation"]),
        wmd=lambda wildcards, input: spec_json(
            {WMD.slug: input.wmd, WMD_TFIDF.slug: input.wmd_tfidf}
        ),
    shell:
        "wmdeval evaluate --documents {input.documents} --splits {input.splits}"
        " --wmd {params.wmd:q} --settings {params.settings:q} --dataset {wildcards.dataset}"
        " --variant {wildcards.variant} --out {output} 2> {log}"
