# Stage 4b: distances beyond the paper, and your own (`methods:` in the config), each one
# full matrix per variant in full mode, in the DISTANCES schema of WMD's (so evaluation,
# the tables and the analyses take them like any method), or in knn mode neighbour lists. WRD is transport and goes through the WMD rules.
# Code: workflow/wmdeval/distances/embedding.py (WCD, RWMD, cosine of mean word vectors),
# workflow/wmdeval/distances/external.py (document vectors, precomputed matrices, callables).


rule embedding_matrix:
    input:
        documents="results/{dataset}/{variant}/documents.parquet",
        embeddings="results/{dataset}/vectors/embeddings.parquet",
    output:
        "results/{dataset}/{variant}/distances/{embedding_method}.parquet",
    log:
        logged("{dataset}/{variant}/distances/{embedding_method}"),
    benchmark:
        benchmarked("{dataset}/{variant}/distances/{embedding_method}")
    conda:
        "../../envs/wmdeval.yaml"
    threads: config["wmd"]["threads"]
    resources:
        # the matrix, and RWMD's word costs per thread (measured: benchmarks/paper_scale.py)
        mem_mb=embedding_matrix_job_mem_mb,
        # RWMD from its measured CPU time per document and word; the others: a minute
        runtime=lambda wildcards, input, attempt: embedding_matrix_runtime(
            input.documents,
            wildcards.embedding_method,
            attempt,
            planned_rows(wildcards.dataset, input.documents),
        ),
    shell:
        "wmdeval embedding-matrix --documents {input.documents}"
        " --embeddings {input.embeddings} --method {wildcards.embedding_method}"
        " --threads {threads} --out {output} 2> {log}"


# Your document vectors (methods.vectors), validated against the variant's documents.
rule vector_matrix:
    input:
        unpack(user_vectors_inputs),
    output:
        "results/{dataset}/{variant}/distances/vectors-{vectors}-{vector_metric}.parquet",
    log:
        logged("{dataset}/{variant}/distances/vectors-{vectors}-{vector_metric}"),
    benchmark:
        benchmarked("{dataset}/{variant}/distances/vectors-{vectors}-{vector_metric}")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=matrix_job_mem_mb,
        runtime=30,
    params:
        ids=lambda wildcards, input: (
            f"--ids {input.ids}" if "ids" in input.keys() else ""
        ),
    shell:
        "wmdeval vector-matrix --documents {input.documents} --vectors {input.vectors}"
        " {params.ids} --metric {wildcards.vector_metric} --out {output} 2> {log}"


# knn mode: WCD, the cosine of mean vectors, RWMD (unless WMD's search lists it) and your
# document vectors store no matrix. Per query shard (LISTED_SHARDS: sized by the dataset's
# planned documents), a job computes the rows of a block of queries at a time and keeps
# each query role's top k, ties at the k-th included, with the matrix's values bit for
# bit (wmdeval/distances/neighbour_lists.py); evaluate reads a lone shard as it is, more
# shards combined into one neighbour table.
rule embedding_neighbours:
    input:
        documents="results/{dataset}/{variant}/documents.parquet",
        splits="results/{dataset}/{variant}/splits.parquet",
        embeddings="results/{dataset}/vectors/embeddings.parquet",
    output:
        pairs="results/{dataset}/{variant}/neighbour_shards/{listed_embedding}/{shard}.parquet",
        certificates="results/{dataset}/{variant}/neighbour_shards/{listed_embedding}/{shard}.certificates.parquet",
    log:
        logged("{dataset}/{variant}/neighbour_shards/{listed_embedding}/{shard}"),
    benchmark:
        benchmarked("{dataset}/{variant}/neighbour_shards/{listed_embedding}/{shard}")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        # a block of rows and its ranking, the documents and vectors (planning/resources.py)
        mem_mb=lambda wildcards, input, attempt: listed_job_resources(
            wildcards, input, wildcards.listed_embedding, attempt
        )["mem_mb"],
        runtime=lambda wildcards, input, attempt: listed_job_resources(
            wildcards, input, wildcards.listed_embedding, attempt
        )["runtime"],
    params:
        settings=spec_json(config["evaluation"]),
    shell:
        "wmdeval embedding-neighbours --documents {input.documents} --splits {input.splits}"
        " --embeddings {input.embeddings} --method {wildcards.listed_embedding}"
        " --settings {params.settings:q} --shard {wildcards.shard}"
        " --out-pairs {output.pairs} --out-certificates {output.certificates} 2> {log}"


rule vector_neighbours:
    input:
        unpack(user_vectors_inputs),
        splits="results/{dataset}/{variant}/splits.parquet",
    output:
        pairs="results/{dataset}/{variant}/neighbour_shards/vectors-{vectors}-{vector_metric}/{shard}.parquet",
        certificates="results/{dataset}/{variant}/neighbour_shards/vectors-{vectors}-{vector_metric}/{shard}.certificates.parquet",
    log:
        logged(
            "{dataset}/{variant}/neighbour_shards/vectors-{vectors}-{vector_metric}/{shard}"
        ),
    benchmark:
        benchmarked(
            "{dataset}/{variant}/neighbour_shards/vectors-{vectors}-{vector_metric}/{shard}"
        )
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=lambda wildcards, input, attempt: listed_job_resources(
            wildcards, input, "vectors", attempt
        )["mem_mb"],
        runtime=lambda wildcards, input, attempt: listed_job_resources(
            wildcards, input, "vectors", attempt
        )["runtime"],
    params:
        ids=lambda wildcards, input: (
            f"--ids {input.ids}" if "ids" in input.keys() else ""
        ),
        settings=spec_json(config["evaluation"]),
    shell:
        "wmdeval vector-neighbours --documents {input.documents} --splits {input.splits}"
        " --vectors {input.vectors} {params.ids} --metric {wildcards.vector_metric}"
        " --settings {params.settings:q} --shard {wildcards.shard}"
        " --out-pairs {output.pairs} --out-certificates {output.certificates} 2> {log}"


rule listed_neighbours:
    input:
        documents="results/{dataset}/{variant}/documents.parquet",
        pairs=lambda wildcards: listed_shard_files(wildcards, ".parquet"),
        certificates=lambda wildcards: listed_shard_files(
            wildcards, ".certificates.parquet"
        ),
    output:
        pairs="results/{dataset}/{variant}/neighbours/{listed}.parquet",
        certificates="results/{dataset}/{variant}/neighbours/{listed}.certificates.parquet",
    log:
        logged("{dataset}/{variant}/neighbours/{listed}"),
    benchmark:
        benchmarked("{dataset}/{variant}/neighbours/{listed}")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    shell:
        "wmdeval wmd-neighbours --documents {input.documents} --pairs {input.pairs}"
        " --certificates {input.certificates} --out-pairs {output.pairs}"
        " --out-certificates {output.certificates} 2> {log}"


# Your precomputed matrix (methods.matrices), validated and cut to the variant's documents.
rule precomputed_matrix:
    input:
        documents="results/{dataset}/{variant}/documents.parquet",
        matrix=user_matrix_file,
    output:
        "results/{dataset}/{variant}/distances/matrix-{user_matrix}.parquet",
    log:
        logged("{dataset}/{variant}/distances/matrix-{user_matrix}"),
    benchmark:
        benchmarked("{dataset}/{variant}/distances/matrix-{user_matrix}")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=matrix_job_mem_mb,
        runtime=30,
    shell:
        "wmdeval precomputed-matrix --documents {input.documents} --matrix {input.matrix}"
        " --out {output} 2> {log}"


# Your Python function (methods.callables), in row shards like WMD's blocks, then gathered.
rule callable_shard:
    input:
        documents="results/{dataset}/{variant}/documents.parquet",
        embeddings="results/{dataset}/vectors/embeddings.parquet",
        source=callable_source,
    output:
        "results/{dataset}/{variant}/callable_shards/{user_callable}/{shard}.parquet",
    log:
        logged("{dataset}/{variant}/callable_shards/{user_callable}/{shard}"),
    benchmark:
        benchmarked("{dataset}/{variant}/callable_shards/{user_callable}/{shard}")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=matrix_job_mem_mb,
        runtime=60,
    params:
        function=lambda wildcards: CALLABLE_METHODS[wildcards.user_callable]["function"],
    shell:
        "wmdeval callable-shard --documents {input.documents}"
        " --embeddings {input.embeddings} --function {params.function:q}"
        " --shard {wildcards.shard} --out {output} 2> {log}"


rule callable_gather:
    input:
        documents="results/{dataset}/{variant}/documents.parquet",
        shards=lambda wildcards: expand(
            "results/{{dataset}}/{{variant}}/callable_shards/{{user_callable}}/{shard}.parquet",
            shard=callable_shards(wildcards.user_callable),
        ),
    output:
        "results/{dataset}/{variant}/distances/callable-{user_callable}.parquet",
    log:
        logged("{dataset}/{variant}/distances/callable-{user_callable}"),
    benchmark:
        benchmarked("{dataset}/{variant}/distances/callable-{user_callable}")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=matrix_job_mem_mb,
        runtime=30,
    shell:
        "wmdeval callable-gather --documents {input.documents} --shards {input.shards}"
        " --out {output} 2> {log}"


# knn mode: the analyses read the seeded sample's matrices; a user's precomputed matrix's
# and callable's are cut from the variant's full matrix, the listed methods' (no full
# matrix then: WCD, RWMD, the cosine, document vectors) computed on the sample's
# documents (1,000 documents: seconds).
use rule embedding_matrix as sample_embedding_matrix with:
    input:
        documents="results/{dataset}/{variant}/sample/documents.parquet",
        embeddings="results/{dataset}/vectors/embeddings.parquet",
    output:
        "results/{dataset}/{variant}/sample/distances/{embedding_method}.parquet",
    log:
        logged("{dataset}/{variant}/sample/distances/{embedding_method}"),
    benchmark:
        benchmarked("{dataset}/{variant}/sample/distances/{embedding_method}")
    wildcard_constraints:
        embedding_method=names_regex(EMBEDDING_MATRIX_SLUGS),


use rule vector_matrix as sample_vector_matrix with:
    input:
        unpack(sample_user_vectors_inputs),
    output:
        "results/{dataset}/{variant}/sample/distances/vectors-{vectors}-{vector_metric}.parquet",
    log:
        logged("{dataset}/{variant}/sample/distances/vectors-{vectors}-{vector_metric}"),
    benchmark:
        benchmarked(
            "{dataset}/{variant}/sample/distances/vectors-{vectors}-{vector_metric}"
        )


rule sample_dense_matrix:
    input:
        matrix="results/{dataset}/{variant}/distances/{dense}.parquet",
        documents="results/{dataset}/{variant}/sample/documents.parquet",
    output:
        "results/{dataset}/{variant}/sample/distances/{dense}.parquet",
    log:
        logged("{dataset}/{variant}/sample/distances/{dense}"),
    benchmark:
        benchmarked("{dataset}/{variant}/sample/distances/{dense}")
    wildcard_constraints:
        dense=names_regex(MATRIX_SLUGS),
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        # the sample's sub-matrix, read a row group at a time
        mem_mb=subset_job_mem_mb,
        runtime=30,
    shell:
        "wmdeval wmd-subset --matrix {input.matrix} --documents {input.documents}"
        " --out {output} 2> {log}"
