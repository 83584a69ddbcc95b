# Stage 3: out-of-vocabulary filter (decided on the original documents) and the variants.
# Code: workflow/wmdeval/cleaning/vocabulary.py; the table: reporting/tables.py.


rule filter_oov:
    input:
        documents="results/{dataset}/ingest/documents.parquet",
        embeddings="results/{dataset}/vectors/embeddings.parquet",
    output:
        documents="results/{dataset}/oov/documents.parquet",
        report="results/{dataset}/oov/report.parquet",
    log:
        logged("{dataset}/filter_oov"),
    benchmark:
        benchmarked("{dataset}/filter_oov")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        min_df=lambda wildcards: dataset_spec(wildcards)["vocabulary"]["min_df"],
        max_words=lambda wildcards: json.dumps(
            dataset_spec(wildcards)["vocabulary"]["max_words_per_doc"]
        ),
    shell:
        "wmdeval filter-oov --documents {input.documents} --embeddings {input.embeddings}"
        " --dataset {wildcards.dataset} --min-df {params.min_df}"
        " --max-words-per-doc {params.max_words} --out-documents {output.documents}"
        " --report {output.report} 2> {log}"


rule select_variant:
    input:
        unpack(variant_inputs),
    output:
        documents="results/{dataset}/{variant}/documents.parquet",
        splits="results/{dataset}/{variant}/splits.parquet",
    log:
        logged("{dataset}/{variant}/select_variant"),
    benchmark:
        benchmarked("{dataset}/{variant}/select_variant")
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


rule oov_table:
    input:
        expand("results/{dataset}/oov/report.parquet", dataset=DATASETS),
    output:
        csv=report(
            "results/tables/oov.csv",
            caption="../report/oov.rst",
            category="Tables",
        ),
        md="results/tables/oov.md",
    log:
        logged("tables/oov"),
    benchmark:
        benchmarked("tables/oov")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        expect=expect(dataset=DATASETS),
        modes=spec_json({d: wmd_mode(d) for d in DATASETS}),
    shell:
        "wmdeval summary-table --inputs {input} --csv {output.csv} --md {output.md}"
        " --expect {params.expect:q} --wmd-modes {params.modes:q}"
        " --title 'Out-of-vocabulary filter and document-size control"
        " (docs/protocol.md §4)' 2> {log}"
