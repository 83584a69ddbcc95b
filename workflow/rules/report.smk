# Stage 6: results/scores.parquet, the paper's tables and figures.
# Code: workflow/wmdeval/reporting/ (tables.py, figures.py).


rule collect_scores:
    input:
        expand(
            "results/{dataset}/{variant}/scores.parquet",
            dataset=DATASETS,
            variant=VARIANTS,
        ),
    output:
        "results/scores.parquet",
    log:
        logged("collect_scores"),
    benchmark:
        benchmarked("collect_scores")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        expect=EXPECT_SCORES,
    shell:
        "wmdeval collect-scores --scores {input} --expect {params.expect:q}"
        " --out {output} 2> {log}"


rule collect_scores_allwords:
    input:
        allwords_scores(),
    output:
        "results/scores_allwords.parquet",
    log:
        logged("collect_scores_allwords"),
    benchmark:
        benchmarked("collect_scores_allwords")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        expect=EXPECT_ALLWORDS,
    shell:
        "wmdeval collect-scores --scores {input} --expect {params.expect:q}"
        " --out {output} 2> {log}"


rule tables:
    input:
        scores="results/scores.parquet",
        allwords=["results/scores_allwords.parquet"] if allwords_scores() else [],
        # Table 2's Markdown marks the differences to BOW (L1/L1) found significant
        significance="results/tables/significance.csv",
        # a k above a variant's training documents is a warning under each table
        splits=list(significance_splits().values()),
    output:
        [
            report(
                f"results/tables/{table}.csv",
                caption=f"../report/{table}.rst",
                category="Tables",
            )
            for table in PAPER_TABLES
        ],
        # the Markdown copies carry the notes: significance marks and warnings (a k above
        # the training documents), so the report shows them too
        [
            report(
                f"results/tables/{table}.md",
                caption=f"../report/{table}.rst",
                category="Tables",
                subcategory="Markdown, with notes and warnings",
            )
            for table in PAPER_TABLES
        ],
    log:
        logged("tables/paper"),
    benchmark:
        benchmarked("tables/paper")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        expect=EXPECT_SCORES,
        expect_allwords=EXPECT_ALLWORDS,
        alpha=config["significance"]["alpha"],
        allwords=lambda wildcards, input: (
            f"--allwords {input.allwords}" if input.allwords else ""
        ),
        splits=significance_split_arguments,
        evaluation=spec_json(config["evaluation"]),
    shell:
        "wmdeval tables --scores {input.scores} --out-dir results/tables"
        " --expect {params.expect:q} --expect-allwords {params.expect_allwords:q}"
        " {params.allwords} --significance {input.significance}"
        " --alpha {params.alpha} {params.splits} --evaluation {params.evaluation:q}"
        " 2> {log}"


# knn mode: what the neighbour searches of this run will cost, from each method's
# forecast (rule wmd_forecast); cheap to get before any search runs:
# snakemake --cores 2 results/tables/cost_forecast.tsv
rule cost_forecast:
    input:
        [forecast_file(d, v, slug) for d, v, slug in planned_forecasts()],
    output:
        "results/tables/cost_forecast.tsv",
    log:
        logged("tables/cost_forecast"),
    benchmark:
        benchmarked("tables/cost_forecast")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        expect=spec_json(
            {
                "forecasts": [f"{d}/{v}/{slug}" for d, v, slug in planned_forecasts()],
                # the clean searches that wait for the original's pairs (search_reuse)
                "reused": [
                    f"{d}/{v}/{slug}"
                    for d, v, slug in planned_forecasts()
                    if v == "clean" and re.fullmatch(VARIANT_FREE_METHODS, slug)
                ],
            }
        ),
        cores=" ".join(map(str, WALL_CORE_COUNTS)),
    # the searches' wall time on the --cores of this run (WMDEVAL_CORES, common.smk) and
    # on 2, 16 and 64 cores
    shell:
        "wmdeval cost-forecast-table --forecasts {input} --expect {params.expect:q}"
        " --cores ${{WMDEVAL_CORES:-}} {params.cores} --out {output} 2> {log}"


rule figure3:
    input:
        "results/scores.parquet",
    output:
        png=report(
            "results/figures/figure3_{variant}.png",
            caption="../report/figure3.rst",
            category="Figures",
            subcategory="{variant}",
        ),
        svg="results/figures/figure3_{variant}.svg",
    log:
        logged("figures/figure3_{variant}"),
    benchmark:
        benchmarked("figures/figure3_{variant}")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        expect=EXPECT_SCORES,
    shell:
        "wmdeval figure3 --scores {input} --variant {wildcards.variant} --out {output.png}"
        " --expect {params.expect:q} 2> {log}"


rule figure4:
    input:
        unpack(figure_inputs),
    output:
        png=report(
            "results/figures/figure4_{variant}.png",
            caption="../report/figure4.rst",
            category="Figures",
            subcategory="{variant}",
        ),
        svg="results/figures/figure4_{variant}.svg",
    log:
        logged("figures/figure4_{variant}"),
    benchmark:
        benchmarked("figures/figure4_{variant}")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=lambda wildcards, input, attempt: 4000 * attempt,
        runtime=60,
    params:
        datasets=DATASETS,
        pca=lambda wildcards, input: (
            f"--pca-embeddings {input.pca_embeddings} --pca-matrices {input.pca_matrices}"
            if PCA_DIMS
            else ""
        ),
        max_documents=config["report"]["figure4_documents"],
        seed=config["report"]["seed"],
    shell:
        "wmdeval figure4 --datasets {params.datasets} --documents {input.documents}"
        " --splits {input.splits} --matrices {input.matrices}"
        " --embeddings {input.embeddings} {params.pca}"
        " --max-documents {params.max_documents} --seed {params.seed}"
        " --out {output.png} 2> {log}"


rule figure5:
    input:
        unpack(figure_inputs),
    output:
        png=report(
            "results/figures/figure5_{variant}.png",
            caption="../report/figure5.rst",
            category="Figures",
            subcategory="{variant}",
        ),
        svg="results/figures/figure5_{variant}.svg",
    log:
        logged("figures/figure5_{variant}"),
    benchmark:
        benchmarked("figures/figure5_{variant}")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=lambda wildcards, input, attempt: 4000 * attempt,
        runtime=30,
    params:
        datasets=DATASETS,
        pca=lambda wildcards, input: (
            f"--pca-matrices {input.pca_matrices} --pca-dim {PCA_DIMS[0]}"
            if PCA_DIMS
            else ""
        ),
        points=config["report"]["scatter_points"],
        seed=config["report"]["seed"],
    shell:
        "wmdeval figure5 --datasets {params.datasets} --matrices {input.matrices}"
        " --documents {input.documents} --embeddings {input.embeddings} {params.pca}"
        " --max-points {params.points} --seed {params.seed} --out {output.png} 2> {log}"
