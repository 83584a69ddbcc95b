# Stage 2: exact duplicates (identical bags of words) and the clean variant's survivors.
# Code: workflow/wmdeval/cleaning/duplicates.py; the table: reporting/tables.py.


rule duplicates:
    input:
        documents="results/{dataset}/ingest/documents.parquet",
        splits="results/{dataset}/ingest/splits.parquet",
    output:
        **({"near": NEAR_DUPLICATES} if config["duplicates"]["near"]["enabled"] else {}),
        groups="results/{dataset}/duplicates/groups.parquet",
        summary="results/{dataset}/duplicates/summary.parquet",
        kept="results/{dataset}/duplicates/kept.parquet",
    log:
        logged("{dataset}/duplicates"),
    benchmark:
        benchmarked("{dataset}/duplicates")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        seed=config["duplicates"]["seed"],
        near=near_duplicates_argument,
    shell:
        "wmdeval duplicates --documents {input.documents} --splits {input.splits}"
        " --dataset {wildcards.dataset} --seed {params.seed} --groups {output.groups}"
        " --summary {output.summary} --kept {output.kept} {params.near} 2> {log}"


rule duplicates_table:
    input:
        expand("results/{dataset}/duplicates/summary.parquet", dataset=DATASETS),
    output:
        csv=report(
            "results/tables/duplicates.csv",
            caption="../report/duplicates.rst",
            category="Tables",
        ),
        md="results/tables/duplicates.md",
    log:
        logged("tables/duplicates"),
    benchmark:
        benchmarked("tables/duplicates")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        # the duplicates report has an original and a clean row, whatever the variants
        expect=expect(dataset=DATASETS, variant=["original", "clean"]),
    shell:
        "wmdeval summary-table --inputs {input} --csv {output.csv} --md {output.md}"
        " --expect {params.expect:q}"
        " --title 'Duplicates (docs/protocol.md §3, paper Table 1)'"
        " --note 'One row per dataset and variant; the clean variant must have no duplicates.'"
        " 2> {log}"
