"""Steps and where their time goes: step bounds, the breakdown, outliers, throughput."""
