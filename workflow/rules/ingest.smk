# Stage 1: corpora -> documents and train/test splits; embeddings of the corpus vocabulary.
# Code: workflow/wmdeval/ingest/ (corpora.py, kusner.py, embeddings.py).


rule ingest:
    input:
        text_source_inputs,
    output:
        documents="results/{dataset}/ingest/documents.parquet",
        splits="results/{dataset}/ingest/splits.parquet",
    log:
        logged("{dataset}/ingest"),
    benchmark:
        benchmarked("{dataset}/ingest")
    wildcard_constraints:
        dataset=names_regex(TEXT_DATASETS),
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        # wildcards alone: Snakemake records it, so a changed key reruns ingest (common.smk)
        spec=lambda wildcards: spec_json(ingest_spec(dataset_spec(wildcards))),
    shell:
        "wmdeval ingest --spec {params.spec:q} --documents {output.documents}"
        " --splits {output.splits} 2> {log}"


rule ingest_kusner:
    input:
        lambda wildcards: source_file(dataset_spec(wildcards)),
    output:
        documents="results/{dataset}/ingest/documents.parquet",
        splits="results/{dataset}/ingest/splits.parquet",
        embeddings="results/{dataset}/vectors/embeddings.parquet",
        report="results/{dataset}/ingest/report.parquet",
    log:
        logged("{dataset}/ingest"),
    benchmark:
        benchmarked("{dataset}/ingest")
    wildcard_constraints:
        dataset=names_regex(KUSNER_DATASETS),
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        # the file's data inflated, plus Python objects per document (planning/resources.py)
        mem_mb=lambda wildcards, input, attempt: kusner_ingest_mem_mb(input[0], attempt),
        runtime=60,
    params:
        normalize=lambda wildcards: json.dumps(dataset_spec(wildcards)["normalize"]),
    shell:
        "wmdeval ingest-kusner --mat {input} --dataset {wildcards.dataset}"
        " --normalize {params.normalize} --documents {output.documents}"
        " --splits {output.splits} --embeddings {output.embeddings}"
        " --report {output.report} 2> {log}"


rule train_embeddings:
    input:
        unpack(trained_embedding_inputs),
    output:
        "resources/embeddings/{trained}.vec",
    log:
        logged("embeddings/{trained}"),
    benchmark:
        benchmarked("embeddings/{trained}")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        spec=lambda wildcards: spec_json(config["embeddings"][wildcards.trained]),
        corpora=lambda wildcards: spec_json(
            [
                ingest_spec(config["datasets"][d])
                for d in config["embeddings"][wildcards.trained]["train_on"]
            ]
        ),
    shell:
        "wmdeval train-embeddings --spec {params.spec:q} --corpora {params.corpora:q}"
        " --out {output} 2> {log}"


rule lookup_embeddings:
    input:
        documents="results/{dataset}/ingest/documents.parquet",
        embedding=lambda wildcards: embedding_file(
            dataset_spec(wildcards)["embeddings"]
        ),
    output:
        "results/{dataset}/vectors/embeddings.parquet",
    log:
        logged("{dataset}/lookup_embeddings"),
    benchmark:
        benchmarked("{dataset}/lookup_embeddings")
    wildcard_constraints:
        dataset=names_regex(TEXT_DATASETS),
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        # streaming read: only the corpus vocabulary is held
        mem_mb=lambda wildcards, attempt: 1000 * attempt,
        runtime=60,
    params:
        format=lambda wildcards: embedding_format(dataset_spec(wildcards)["embeddings"]),
        limit=lambda wildcards: config["embeddings"][
            dataset_spec(wildcards)["embeddings"]
        ]["limit"]
        or 0,
        normalize=lambda wildcards: json.dumps(
            config["embeddings"][dataset_spec(wildcards)["embeddings"]]["normalize"]
        ),
    shell:
        "wmdeval lookup-embeddings --documents {input.documents} --embedding {input.embedding}"
        " --format {params.format} --limit {params.limit} --normalize {params.normalize}"
        " --out {output} 2> {log}"
