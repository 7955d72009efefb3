import m0001 from "./0001_tenancy"
import m0002 from "./0002_api_keys"
import m0003 from "./0003_audit"
import m0004 from "./0004_settings"
import m0005 from "./0005_leases"
import m0006 from "./0006_connections"
import m0007 from "./0007_audit_details"
import m0008 from "./0008_budgets"
import m0009 from "./0009_pii_rules"
import m0010 from "./0010_schema_snapshots"
import m0011 from "./0011_schema_curation"
import m0012 from "./0012_schema_watches"
import m0013 from "./0013_api_key_tombstones"
import m0014 from "./0014_audit_in_change_transactions"
import m0015 from "./0015_audit_rollups"
import m0016 from "./0016_agent_runs"
import m0017 from "./0017_secrets"
import m0018 from "./0018_chat"
import m0019 from "./0019_knowledge"
import m0020 from "./0020_reports"
import m0021 from "./0021_queued_agent_runs"
import m0022 from "./0022_job_steps"
import m0023 from "./0023_job_events"
import m0024 from "./0024_audit_rollups_folded"
import m0025 from "./0025_sandboxes"
import m0026 from "./0026_notebook_sessions"
import m0027 from "./0027_notebook_sessions_per_credential"
import m0028 from "./0028_workspace_projects"
import m0029 from "./0029_db_branches"
import m0030 from "./0030_dbt_projects"
import m0031 from "./0031_db_branch_placement"
import m0032 from "./0032_eval_configs"
import m0033 from "./0033_eval_uploads"
import m0034 from "./0034_eval_runs"
import m0035 from "./0035_api_key_connections"
import m0036 from "./0036_agent_run_interactive"
import m0037 from "./0037_api_key_branch"
import m0038 from "./0038_eval_retention"
import m0039 from "./0039_api_key_knowledge_overlay"
import m0040 from "./0040_agent_run_eval_owner"
import m0041 from "./0041_sandbox_memory"
import m0042 from "./0042_eval_history"

export const migrations = {
  "0001_tenancy": m0001,
  "0002_api_keys": m0002,
  "0003_audit": m0003,
  "0004_settings": m0004,
  "0005_leases": m0005,
  "0006_connections": m0006,
  "0007_audit_details": m0007,
  "0008_budgets": m0008,
  "0009_pii_rules": m0009,
  "0010_schema_snapshots": m0010,
  "0011_schema_curation": m0011,
  "0012_schema_watches": m0012,
  "0013_api_key_tombstones": m0013,
  "0014_audit_in_change_transactions": m0014,
  "0015_audit_rollups": m0015,
  "0016_agent_runs": m0016,
  "0017_secrets": m0017,
  "0018_chat": m0018,
  "0019_knowledge": m0019,
  "0020_reports": m0020,
  "0021_queued_agent_runs": m0021,
  "0022_job_steps": m0022,
  "0023_job_events": m0023,
  "0024_audit_rollups_folded": m0024,
  "0025_sandboxes": m0025,
  "0026_notebook_sessions": m0026,
  "0027_notebook_sessions_per_credential": m0027,
  "0028_workspace_projects": m0028,
  "0029_db_branches": m0029,
  "0030_dbt_projects": m0030,
  "0031_db_branch_placement": m0031,
  "0032_eval_configs": m0032,
  "0033_eval_uploads": m0033,
  "0034_eval_runs": m0034,
  "0035_api_key_connections": m0035,
  "0036_agent_run_interactive": m0036,
  "0037_api_key_branch": m0037,
  "0038_eval_retention": m0038,
  "0039_api_key_knowledge_overlay": m0039,
  "0040_agent_run_eval_owner": m0040,
  "0041_sandbox_memory": m0041,
  "0042_eval_history": m0042
}
