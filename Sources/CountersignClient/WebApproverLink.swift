public import CountersignCore

/// Links that open the broker's web approver (``CountersignCore/WebApproverLink``).
public typealias WebApproverLink = CountersignCore.WebApproverLink
