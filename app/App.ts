import { Layer } from "effect"
import { AgentRunJob } from "../actors/jobs/AgentRunJob"
import { DecisionSteps } from "../actors/jobs/agentRun/DecisionSteps"
import { ModelTurnStep } from "../actors/jobs/agentRun/ModelTurnStep"
import { QueryApprovalSteps } from "../actors/jobs/agentRun/QueryApprovalSteps"
import { RunLifecycle } from "../actors/jobs/agentRun/RunLifecycle"
import { ToolCallStep } from "../actors/jobs/agentRun/ToolCallStep"
import { jobStarter } from "../actors/jobs/JobStarter"
import { AuditFoldLoop } from "../actors/loops/AuditFoldLoop"
import { AuditRetentionLoop } from "../actors/loops/AuditRetentionLoop"
import { SandboxSnapshotExpiryLoop } from "../actors/loops/SandboxSnapshotExpiryLoop"
import { EvalAutorunLoop } from "../actors/loops/EvalAutorunLoop"
import { EvalRetentionLoop } from "../actors/loops/EvalRetentionLoop"
import { EvalUploadExpiryLoop } from "../actors/loops/EvalUploadExpiryLoop"
import { EvalRunReaperLoop } from "../actors/loops/EvalRunReaperLoop"
import { EvalRunJob } from "../actors/jobs/EvalRunJob"
import { EvalRunLifecycle } from "../actors/jobs/evalRun/EvalRunLifecycle"
import { EvalTaskSteps } from "../actors/jobs/evalRun/EvalTaskSteps"
import { KnowledgeRetentionLoop } from "../actors/loops/KnowledgeRetentionLoop"
import { HealthLoop } from "../actors/loops/HealthLoop"
import { SchemaRefreshLoop } from "../actors/loops/SchemaRefreshLoop"
import { SchemaWatchLoop } from "../actors/loops/SchemaWatchLoop"
import { ResultCache } from "../src/governance/ResultCache"
import { Gate } from "../src/gate/Gate"
import { ToolCatalogue } from "../src/tools/ToolCatalogue"
import { ToolCalls } from "../src/tools/ToolCalls"
import { AgentRunKind } from "../src/jobs/AgentRunWorkflow"
import { EvalRunKind } from "../src/jobs/EvalRunWorkflow"
import { JobSteps } from "../src/jobs/JobSteps"
import { AgentRunsRepo } from "../src/repos/AgentRunsRepo"
import { AuditRepo } from "../src/repos/AuditRepo"
import { ChatRepo } from "../src/repos/ChatRepo"
import { JobEventsRepo } from "../src/repos/JobEventsRepo"
import { ActingPrincipals } from "../src/services/ActingPrincipals"
import { CodeQueries } from "../src/services/CodeQueries"
import { AgentRuns } from "../src/services/AgentRuns"
import { AnalysisTrails } from "../src/services/AnalysisTrails"
import { ApiKeys } from "../src/services/ApiKeys"
import { Budgets } from "../src/services/Budgets"
import { Chat } from "../src/services/Chat"
import { Audit } from "../src/services/Audit"
import { Authenticator } from "../src/services/Authenticator"
import { ConnectionChecks } from "../src/services/ConnectionChecks"
import { ConnectionHealth } from "../src/services/ConnectionHealth"
import { ConnectionTransfer } from "../src/services/ConnectionTransfer"
import { Connections } from "../src/services/Connections"
import { LocalAccess } from "../src/services/LocalAccess"
import { Metrics } from "../src/services/Metrics"
import { PiiDetector } from "../src/services/PiiDetector"
import { Posture } from "../src/services/Posture"
import { Queries } from "../src/services/Queries"
import { RunEventsFeed } from "../src/services/RunEventsFeed"
import { Knowledge } from "../src/services/Knowledge"
import { KnowledgeSearch } from "../src/services/KnowledgeSearch"
import { KnowledgeRepo } from "../src/repos/KnowledgeRepo"
import { ReportsRepo } from "../src/repos/ReportsRepo"
import { EvalConfigsRepo } from "../src/repos/EvalConfigsRepo"
import { EvalAccess } from "../src/services/EvalAccess"
import { EvalSandboxes } from "../src/services/EvalSandboxes"
import { EvalConfigs } from "../src/services/EvalConfigs"
import { EvalSets } from "../src/services/EvalSets"
import { EvalUploads } from "../src/services/EvalUploads"
import { EvalUploadsRepo } from "../src/repos/EvalUploadsRepo"
import { EvalRunsRepo } from "../src/repos/EvalRunsRepo"
import { EvalAccuracy } from "../src/services/EvalAccuracy"
import { RunCoverage } from "../src/services/RunCoverage"
import { Mailer } from "../layers/Mailer"
import { EvalAccuracyRepo } from "../src/repos/EvalAccuracyRepo"
import { EvalAutorunRepo } from "../src/repos/EvalAutorunRepo"
import { EvalAutorun } from "../src/services/EvalAutorun"
import { EvalRuns } from "../src/services/EvalRuns"
import { EvalQueries } from "../src/services/EvalQueries"
import { EvalEvidence } from "../src/services/EvalEvidence"
import { BuildFingerprints } from "../src/services/BuildFingerprints"
import { ObjectStore } from "../layers/ObjectStore"
import { SandboxesRepo } from "../src/repos/SandboxesRepo"
import { Sandboxes } from "../src/services/Sandboxes"
import { NotebookSessions } from "../src/services/NotebookSessions"
import { NotebookSessionsRepo } from "../src/repos/NotebookSessionsRepo"
import { SandboxProcesses } from "../layers/SandboxProcesses"
import { Reports } from "../src/services/Reports"
import { SchemaChanges } from "../src/services/SchemaChanges"
import { SchemaContext } from "../src/services/SchemaContext"
import { SchemaCuration } from "../src/services/SchemaCuration"
import { SchemaWatches } from "../src/services/SchemaWatches"
import { SchemaExplorer } from "../src/services/SchemaExplorer"
import { SchemaRelations } from "../src/services/SchemaRelations"
import { Schemas } from "../src/services/Schemas"
import { Secrets } from "../src/services/Secrets"
import { SecretsRepo } from "../src/repos/SecretsRepo"
import { Settings } from "../src/services/Settings"
import { WorkspaceProjects } from "../src/services/WorkspaceProjects"
import { DbBranches } from "../src/services/DbBranches"
import { DbtRunTokens } from "../src/services/DbtRunTokens"
import { DbtProjects } from "../src/services/DbtProjects"
import { DbtProjectsRepo } from "../src/repos/DbtProjectsRepo"
import { DbBranchesRepo } from "../src/repos/DbBranchesRepo"
import { PostgresTemplateBranches } from "../layers/branches/PostgresTemplateBranches"
import { BranchReaperLoop } from "../actors/loops/BranchReaperLoop"
import { WorkspaceProjectsRepo } from "../src/repos/WorkspaceProjectsRepo"
import { BuildCloud } from "../layers/BuildCloud"
import { GitRepositories } from "../layers/GitRepositories"
import { ConnectorPools } from "../layers/connectors/ConnectorPools"
import { CredentialCipher } from "../layers/CredentialCipher"
import { JobEngineLive, JobRuntime } from "../layers/JobRuntime"
import { LanguageModels } from "../layers/LanguageModels"
import { Leases } from "../layers/Leases"
import { RateLimits } from "../layers/RateLimits"
import { ShutdownDeadline } from "../layers/ShutdownDeadline"
import { EnvConnections } from "./EnvConnections"
import { Foundation } from "./Foundation"
import { HttpServerLive } from "./HttpServer"
import { DbtProxyServerLive } from "./DbtProxyServer"


/** Every service, each built once on the foundation: each lists what it is built on, so this is a plain merge. */
export const ServicesLive = Layer.mergeAll(
  ActingPrincipals.Default,
  AgentRuns.Default,
  AgentRunsRepo.Default,
  AnalysisTrails.Default,
  ApiKeys.Default,
  Audit.Default,
  AuditRepo.Default,
  Authenticator.Default,
  Budgets.Default,
  Chat.Default,
  ChatRepo.Default,
  CodeQueries.Default,
  ConnectionChecks.Default,
  ConnectionHealth.Default,
  ConnectionTransfer.Default,
  Connections.Default,
  DecisionSteps.Default,
  ConnectorPools.Default,
  CredentialCipher.Default,
  Gate.Default,
  Knowledge.Default,
  KnowledgeRepo.Default,
  KnowledgeSearch.Default,
  JobEventsRepo.Default,
  JobRuntime.Default,
  JobSteps.Default,
  LanguageModels.Default,
  Leases.Default,
  LocalAccess.Default,
  ToolCatalogue.Default,
  Metrics.Default,
  ModelTurnStep.Default,
  PiiDetector.Default,
  Posture.Default,
  Queries.Default,
  QueryApprovalSteps.Default,
  RateLimits.Default,
  Reports.Default,
  EvalAccess.Default,
  EvalSandboxes.Default,
  EvalConfigs.Default,
  EvalSets.Default,
  EvalUploads.Default,
  EvalUploadsRepo.Default,
  EvalRuns.Default,
  EvalAccuracy.Default,
  RunCoverage.Default,
  Mailer.Default,
  EvalRunsRepo.Default,
  EvalAccuracyRepo.Default,
  EvalAutorunRepo.Default,
  EvalAutorun.Default,
  EvalQueries.Default,
  EvalEvidence.Default,
  BuildFingerprints.Default,
  EvalRunLifecycle.Default,
  EvalTaskSteps.Default,
  EvalConfigsRepo.Default,
  ObjectStore.Default,
  WorkspaceProjects.Default,
  DbBranches.Default,
  DbtRunTokens.Default,
  DbtProjects.Default,
  DbtProjectsRepo.Default,
  DbBranchesRepo.Default,
  PostgresTemplateBranches.Default,
  WorkspaceProjectsRepo.Default,
  GitRepositories.Default,
  BuildCloud.Default,
  ReportsRepo.Default,
  ResultCache.Default,
  RunEventsFeed.Default,
  RunLifecycle.Default,
  Sandboxes.Default,
  NotebookSessions.Default,
  NotebookSessionsRepo.Default,
  SandboxesRepo.Default,
  SandboxProcesses.Default,
  SchemaChanges.Default,
  SchemaContext.Default,
  SchemaCuration.Default,
  SchemaExplorer.Default,
  SchemaRelations.Default,
  SchemaWatches.Default,
  Schemas.Default,
  Secrets.Default,
  SecretsRepo.Default,
  Settings.Default,
  ToolCallStep.Default,
  ToolCalls.Default
).pipe(Layer.provideMerge(Foundation))

/** Every kind of durable job, registered on this process's runner: every runner registers every kind. */
export const JobsLive = Layer.mergeAll(AgentRunJob.pipe(Layer.provide(JobEngineLive)), EvalRunJob.pipe(Layer.provide(JobEngineLive)), jobStarter<AgentRunsRepo | EvalRunsRepo>(AgentRunKind, EvalRunKind))

/** A gateway: the HTTP server and every background loop, on one store (tests run it in process). */
export const GatewayLive = Layer.mergeAll(HttpServerLive, DbtProxyServerLive, JobsLive, AuditFoldLoop, AuditRetentionLoop, HealthLoop, KnowledgeRetentionLoop, SandboxSnapshotExpiryLoop, EvalUploadExpiryLoop, EvalRunReaperLoop, EvalAutorunLoop, EvalRetentionLoop, BranchReaperLoop, SchemaRefreshLoop, SchemaWatchLoop).pipe(
  // Env connections are in place before the first request is served.
  Layer.provide(EnvConnections),
  Layer.provide(ServicesLive)
)

/** The single composition root: a gateway, stopped within the shutdown deadline or the process is ended. */
export const AppLive = Layer.merge(GatewayLive, ShutdownDeadline)

/** `sluice worker`: a runner of every job kind on the store, without the HTTP server or the loops; stopped within the shutdown deadline too. */
export const WorkerLive = Layer.merge(JobsLive.pipe(Layer.provide(ServicesLive)), ShutdownDeadline)
