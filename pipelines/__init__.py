"""First-stage retrieval pipelines (installed as ``superb.pipelines``)."""
