# Stage 1: corpora -> documents and train/test splits; embeddings for raw-text corpora.


rule ingest:
    output:
        documents="results/{dataset}/ingest/documents.parquet",
        splits="results/{dataset}/ingest/splits.parquet",
    log:
        logged("{dataset}/ingest"),
    benchmark:
        benchmarked("{dataset}/ingest")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        spec=lambda wildcards: spec_json(dataset_spec(wildcards)),
    shell:
        "wmdeval ingest --spec {params.spec:q} --documents {output.documents}"
        " --splits {output.splits} 2> {log}"


rule train_embeddings:
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
                config["datasets"][d]
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
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=4000,
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
